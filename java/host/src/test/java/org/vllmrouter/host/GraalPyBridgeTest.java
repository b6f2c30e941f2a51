package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.graalvm.polyglot.Context;
import org.graalvm.polyglot.Value;
import org.graalvm.polyglot.proxy.ProxyArray;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Python code running in GraalPy inside this JVM drives the engine in-process through
 * {@code vllm_router.bridge.graal}: {@code Router.launch()}, routing, {@code finish_session},
 * {@code sessions()}, {@code shutdown()}.
 */
class GraalPyBridgeTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static MockWorkers workers;
    private static Context python;
    private static Value bridge;

    @BeforeAll
    static void start() {
        workers = MockWorkers.start(MockConfig.builder().count(2).build());
        python = GraalPyRouterArgs.newContext(System.out, System.err);
        bridge = python.eval("python", """
                import json
                from vllm_router import Router, RouterArgs
                from vllm_router.bridge import EngineConfigError, EngineStartupError

                def launch(worker_urls):
                    args = RouterArgs(worker_urls=list(worker_urls), policy="sticky_least_loaded",
                                      port=0, prometheus_port=0)
                    return Router.from_args(args).launch()

                def sessions_json(handle):
                    return json.dumps(handle.session_stats())

                def rejected_config_message():
                    try:
                        Router.from_args(RouterArgs(worker_urls=["http://w:1"], port=0, prometheus_port=0,
                                                    cache_threshold=7.0)).launch().shutdown()
                    except EngineConfigError as e:
                        return "EngineConfigError: " + str(e)
                    return "launched"

                def startup_failure_message():
                    try:
                        Router.from_args(RouterArgs(worker_urls=["http://127.0.0.1:9"], port=0, prometheus_port=0,
                                                    worker_startup_timeout_secs=1,
                                                    worker_startup_check_interval=1)).launch().shutdown()
                    except EngineStartupError as e:
                        return "EngineStartupError: " + str(e)
                    return "launched"

                def context_manager_shuts_down(worker_urls):
                    with launch(worker_urls) as handle:
                        engine = handle._engine
                        assert engine.is_running()
                    return not engine.is_running()

                import types
                types.SimpleNamespace(launch=launch, sessions_json=sessions_json,
                                      rejected_config_message=rejected_config_message,
                                      startup_failure_message=startup_failure_message,
                                      context_manager_shuts_down=context_manager_shuts_down)
                """);
    }

    @AfterAll
    static void stop() {
        if (python != null) {
            python.close();
        }
        if (workers != null) {
            workers.close();
        }
    }

    private static Value urls() {
        return Value.asValue(ProxyArray.fromList(java.util.List.<Object>copyOf(workers.urls())));
    }

    @Test
    void launchRouteFinishSessionAndShutdownInProcess() throws Exception {
        Value handle = bridge.invokeMember("launch", urls());
        try {
            String url = handle.getMember("url").asString();
            assertTrue(handle.getMember("_engine").getMetaObject().getMetaSimpleName().equals("InProcessEngine"),
                    "GraalPy must use the in-process bridge");

            String workerOfA = RouterHttp.chatTurn(url, "A");
            assertEquals(workerOfA, RouterHttp.chatTurn(url, "A"));
            String workerOfB = RouterHttp.chatTurn(url, "B");
            assertNotEquals(workerOfA, workerOfB, "the second session goes to the idle worker");

            Map<String, Object> stats = sessionStats(handle);
            assertEquals(2, ((Number) stats.get("active_sessions")).intValue(), stats.toString());
            assertEquals(2, handle.invokeMember("sessions").getHashSize());

            handle.invokeMember("finish_session", "A");
            stats = sessionStats(handle);
            assertEquals(1, ((Number) stats.get("active_sessions")).intValue(), stats.toString());
            assertEquals(1, ((Number) stats.get("released")).intValue(), stats.toString());
        } finally {
            handle.invokeMember("shutdown");
        }
        assertTrue(!handle.invokeMember("is_running").asBoolean());
    }

    @Test
    void anInvalidConfigurationRaisesTheEnginesMessageAsValueError() {
        String outcome = bridge.invokeMember("rejected_config_message").asString();
        assertTrue(outcome.startsWith("EngineConfigError: Configuration validation failed"), outcome);
    }

    @Test
    void aRouterThatCannotStartRaisesTheEnginesMessageAsRuntimeError() {
        String outcome = bridge.invokeMember("startup_failure_message").asString();
        assertTrue(outcome.startsWith("EngineStartupError: Timeout 1s waiting for hosts"), outcome);
    }

    @Test
    void theHandleIsAContextManager() {
        assertTrue(bridge.invokeMember("context_manager_shuts_down", urls()).asBoolean());
    }

    private static Map<String, Object> sessionStats(Value handle) throws Exception {
        return JSON.readValue(bridge.invokeMember("sessions_json", handle).asString(), new TypeReference<>() {});
    }
}
