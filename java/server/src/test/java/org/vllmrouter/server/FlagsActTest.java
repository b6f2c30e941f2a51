package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/**
 * Settings that no feature test exercised with a value of its own: each test sets one and shows the router acting on
 * it, so the guard over every flag (py_test/unit/test_every_flag_acts.py) can name the proof.
 */
@ExtendWith(NoLeaks.class)
class FlagsActTest {
    static MockWorkers mock;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.builder().count(1).build());
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    @Test
    void requestIdHeadersChooseWhereTheRequestIdIsTaken() throws Exception {
        Map<String, Object> cfg = Fixture.base(mock.urls());
        cfg.put("request_id_headers", List.of("x-trace-id"));
        try (RouterServer router = Fixture.start(cfg)) {
            HttpResponse<String> traced = TestHttp.get(router.url() + "/liveness", "x-trace-id", "trace-7");
            assertEquals("trace-7", traced.headers().firstValue("x-request-id").orElseThrow());
            HttpResponse<String> correlated = TestHttp.get(router.url() + "/liveness", "x-correlation-id", "corr-7");
            assertNotEquals("corr-7", correlated.headers().firstValue("x-request-id").orElseThrow(),
                    "a header of the default list no longer counts");
        }
    }

    @Test
    void corsAllowedOriginsAreTheOnlyOnesAllowed() throws Exception {
        Map<String, Object> cfg = Fixture.base(mock.urls());
        cfg.put("cors_allowed_origins", List.of("http://trainer.example"));
        try (RouterServer router = Fixture.start(cfg)) {
            HttpResponse<String> allowed = TestHttp.method("OPTIONS", router.url() + "/v1/chat/completions", null,
                    "Origin", "http://trainer.example", "Access-Control-Request-Method", "POST");
            assertEquals("http://trainer.example",
                    allowed.headers().firstValue("access-control-allow-origin").orElseThrow());
            HttpResponse<String> other = TestHttp.method("OPTIONS", router.url() + "/v1/chat/completions", null,
                    "Origin", "http://elsewhere.example", "Access-Control-Request-Method", "POST");
            assertFalse(other.headers().firstValue("access-control-allow-origin").isPresent(), other.headers().toString());
        }
    }

    @Test
    void aHealthCheckThatGetsNoAnswerFailsAtTheTimeout() throws Exception {
        // A worker whose port accepts connections and never answers.
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            String silentUrl = "http://127.0.0.1:" + silent.getLocalPort();
            Map<String, Object> cfg = Fixture.base(List.of(mock.worker(0).url(), silentUrl));
            cfg.put("health_check_timeout_secs", 1);
            cfg.put("health_check_interval_secs", 1);
            cfg.put("health_failure_threshold", 1);
            try (RouterServer router = Fixture.start(cfg)) {
                Worker worker = router.workers().get(silentUrl).orElseThrow();
                assertTrue(ResilienceTest.eventually(() -> !worker.isHealthy()), "the unanswered check timed out");
                assertTrue(router.workers().get(mock.worker(0).url()).orElseThrow().isHealthy());
            }
        }
    }

    @Test
    void healthCheckEndpointIsThePathTheRouterProbes() throws Exception {
        MockWorker worker = mock.worker(0);
        Map<String, Object> missing = Fixture.base(mock.urls());
        missing.put("health_check_endpoint", "/no-such-health");
        missing.put("worker_startup_timeout_secs", 1);
        RouterStartException e = assertThrows(RouterStartException.class, () -> Fixture.start(missing));
        assertTrue(e.getMessage().endsWith("Last health check: " + worker.url() + ": HTTP 404"), e.getMessage());

        Map<String, Object> models = Fixture.base(mock.urls());
        models.put("health_check_endpoint", "/v1/models");
        worker.clearCaptured();
        try (RouterServer router = Fixture.start(models)) {
            assertTrue(worker.captured("/health").isEmpty());
            assertFalse(worker.captured("/v1/models").isEmpty());
        }
    }
}
