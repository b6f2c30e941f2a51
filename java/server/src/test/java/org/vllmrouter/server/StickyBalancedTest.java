package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;

import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** sticky_balanced through the router: the request's body size is the weight its session carries. */
@ExtendWith(NoLeaks.class)
class StickyBalancedTest {

    private static String turn(RouterServer router, String session, String content) throws Exception {
        HttpResponse<String> r = TestHttp.post(router.url() + "/v1/chat/completions", TestHttp.chat("m", content),
                "X-Session-ID", session);
        assertEquals(200, r.statusCode(), r.body());
        return r.headers().firstValue("x-worker-id").orElseThrow();
    }

    @Test
    void newSessionsAvoidTheWorkerHoldingALongContextAndKnownOnesStay() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("policy", "sticky_balanced");
            try (RouterServer router = Fixture.start(cfg)) {
                String heavy = turn(router, "long", "word ".repeat(20_000));
                String light = turn(router, "short-1", "hi");
                assertNotEquals(heavy, light);
                // By session count one of these two would go to the heavy worker.
                assertEquals(light, turn(router, "short-2", "hi"));
                assertEquals(light, turn(router, "short-3", "hi"));
                assertEquals(heavy, turn(router, "long", "and a short turn"), "a known session stays");
                for (String id : new String[] {"long", "short-1", "short-2", "short-3"}) {
                    assertEquals(200, TestHttp.post(router.url() + "/finish_session?session_id=" + id, "")
                            .statusCode());
                }
                assertEquals(0, router.sessionStats().activeSessions());
            }
        }
    }

    @Test
    void aSessionsTrajectoryIsKeptAndObservedAtRelease() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("policy", "sticky_balanced");
            try (RouterServer router = Fixture.start(cfg)) {
                String prefix = "a shared system prompt that the worker keeps in its prefix cache ".repeat(8);
                JsonNode first = TestHttp.json(TestHttp.post(router.url() + "/v1/chat/completions",
                        TestHttp.chat("m", prefix + "turn one"), "X-Session-ID", "traj"));
                JsonNode second = TestHttp.json(TestHttp.post(router.url() + "/v1/chat/completions",
                        TestHttp.chat("m", prefix + "turn one, then turn two"), "X-Session-ID", "traj"));

                HttpResponse<String> r = TestHttp.get(router.url() + "/sessions?session_id=traj");
                assertEquals(200, r.statusCode(), r.body());
                JsonNode detail = TestHttp.json(r);
                assertEquals(2, detail.get("turns").asInt());
                assertEquals(0, detail.get("worker_changes").asInt());
                assertEquals(first.at("/usage/prompt_tokens").asLong() + second.at("/usage/prompt_tokens").asLong(),
                        detail.get("prompt_tokens").asLong());
                assertTrue(detail.get("cached_tokens").asLong() > 0, detail.toString());

                assertEquals(200, TestHttp.post(router.url() + "/finish_session?session_id=traj", "").statusCode());
                assertEquals(404, TestHttp.get(router.url() + "/sessions?session_id=traj").statusCode());
                String scrape = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
                assertTrue(scrape.contains("vllm_router_sticky_session_turns_count 1"), scrape);
                assertTrue(scrape.contains("vllm_router_sticky_session_turns_sum 2.0"), scrape);
            }
        }
    }

    @Test
    void groupingByKvSendsNewSessionsToTheWorkerHoldingTheirPrompt() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(3)
                .all(k -> k.kvEvents(true).blockSize(16)).build())) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("policy", "sticky_balanced");
            cfg.put("sticky_balanced_group_by_kv", true);
            try (RouterServer router = Fixture.start(cfg)) {
                assertTrue(ResilienceTest.eventually(() -> router.kvSources().sources().size() == 3),
                        "the KV index opens for sticky_balanced grouping by KV");
                String holder = mock.urls().get(2);
                String prompt = "a task prompt that one worker already holds ".repeat(12);
                String body = "{\"model\":\"mock\",\"max_tokens\":1,\"prompt\":\"" + prompt + "\"}";
                String stored = "vllm_router_kv_events_applied_total{";
                int[] fillers = {0};
                assertEquals(200, TestHttp.post(holder + "/v1/completions", body).statusCode());
                // A batch published before the subscription connected comes back by replay once a later one
                // shows the gap: other prompts make those later batches.
                assertTrue(ResilienceTest.eventually(() -> {
                    try {
                        String scrape = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
                        if (scrape.lines().anyMatch(l -> l.startsWith(stored) && l.contains(holder)
                                && l.contains("type=\"stored\"") && !l.endsWith(" 0.0"))) {
                            return true;
                        }
                        // Long enough to fill a KV block: a shorter prompt stores none and publishes nothing.
                        TestHttp.post(holder + "/v1/completions", "{\"model\":\"mock\",\"max_tokens\":1,\"prompt\":\""
                                + ("filler " + fillers[0]++ + " ").repeat(12) + "\"}");
                        return false;
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }), "the router heard the holder's KV events");
                // Both within the group margin of the least loaded: the second is one prompt above it.
                for (String session : new String[] {"first", "second"}) {
                    HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", body,
                            "X-Session-ID", session);
                    assertEquals(200, r.statusCode(), r.body());
                    assertEquals(mock.worker(2).id(), r.headers().firstValue("x-worker-id").orElseThrow(), session);
                }
            }
        }
    }
}
