package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** The router's view of a session's trajectory: usage read from relayed answers, /sessions' detail, the metrics. */
class TrajectoryTest {
    private MockWorkers mock;
    private RouterServer router;
    private String base;

    @BeforeEach
    void start() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(2).build());
        Map<String, Object> cfg = Fixture.base(mock.urls());
        router = Fixture.start(cfg);
        base = router.url();
    }

    @AfterEach
    void stop() {
        router.close();
        mock.close();
    }

    @Test
    void plainAndStreamedAnswersAddTheirReportedUsage() throws Exception {
        String prefix = "a shared system prompt that the worker keeps in its prefix cache ".repeat(8);
        JsonNode first = TestHttp.json(TestHttp.post(base + "/v1/chat/completions",
                TestHttp.chat("mock", prefix + "turn one"), "X-Session-ID", "traj-1"));
        JsonNode second = TestHttp.json(TestHttp.post(base + "/v1/chat/completions",
                TestHttp.chat("mock", prefix + "turn one, then turn two"), "X-Session-ID", "traj-1"));
        JsonNode streamed = lastUsage(TestHttp.post(base + "/v1/chat/completions",
                "{\"model\":\"mock\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":3,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"" + prefix + "turn three\"}]}",
                "X-Session-ID", "traj-1").body());

        JsonNode detail = detail("traj-1");
        long prompt = first.at("/usage/prompt_tokens").asLong() + second.at("/usage/prompt_tokens").asLong()
                + streamed.at("/prompt_tokens").asLong();
        long cached = first.at("/usage/prompt_tokens_details/cached_tokens").asLong()
                + second.at("/usage/prompt_tokens_details/cached_tokens").asLong()
                + streamed.at("/prompt_tokens_details/cached_tokens").asLong();
        assertEquals("traj-1", detail.get("session_id").asText());
        assertEquals(3, detail.get("turns").asInt());
        assertEquals(0, detail.get("worker_changes").asInt());
        assertEquals(prompt, detail.get("prompt_tokens").asLong());
        assertEquals(cached, detail.get("cached_tokens").asLong());
        assertTrue(cached > 0, "later turns reuse the cached prefix: " + detail);
        assertEquals(Math.round(1000.0 * cached / prompt) / 1000.0, detail.get("cached_token_rate").asDouble(), 1e-9);
        assertEquals(1, detail.get("workers").size());

        JsonNode dashboard = TestHttp.json(TestHttp.get(base + "/dashboard/state"));
        for (JsonNode w : dashboard.get("workers")) {
            if (w.get("url").asText().equals(detail.get("workers").get(0).asText())) {
                assertEquals(detail.get("cached_token_rate").asDouble(), w.get("cached_token_rate").asDouble(), 0.002);
            } else {
                assertTrue(w.get("cached_token_rate").isNull(), w.toString());
            }
        }
    }

    @Test
    void answersWithoutUsageCountTurnsOnly() throws Exception {
        TestHttp.post(base + "/v1/chat/completions", "{\"model\":\"mock\",\"stream\":true,\"max_tokens\":3,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"no usage asked\"}]}", "X-Session-ID", "quiet");
        TestHttp.post(base + "/generate", "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":2}}",
                "X-Session-ID", "quiet");
        JsonNode detail = detail("quiet");
        assertEquals(2, detail.get("turns").asInt());
        assertEquals(0, detail.get("prompt_tokens").asLong());
        assertTrue(detail.get("cached_tokens").isNull(), detail.toString());
        assertTrue(detail.get("cached_token_rate").isNull(), detail.toString());
    }

    @Test
    void aSessionMovedOffARemovedWorkerCountsAWorkerChange() throws Exception {
        TestHttp.post(base + "/v1/completions", "{\"model\":\"mock\",\"prompt\":\"x\",\"max_tokens\":2}",
                "X-Session-ID", "mover");
        String first = detail("mover").get("workers").get(0).asText();
        assertEquals(200, TestHttp.post(base + "/remove_worker?url=" + URLEncoder.encode(first, StandardCharsets.UTF_8),
                "").statusCode());
        TestHttp.post(base + "/v1/completions", "{\"model\":\"mock\",\"prompt\":\"x\",\"max_tokens\":2}",
                "X-Session-ID", "mover");
        JsonNode detail = detail("mover");
        assertEquals(2, detail.get("turns").asInt());
        assertEquals(1, detail.get("worker_changes").asInt());
        assertNotEquals(first, detail.get("workers").get(0).asText());
    }

    @Test
    void releasedSessionsAreObservedInTheHistogramsAndForgotten() throws Exception {
        for (int turn = 0; turn < 3; turn++) {
            TestHttp.post(base + "/v1/completions", "{\"model\":\"mock\",\"prompt\":\"same prompt\",\"max_tokens\":2}",
                    "X-Session-ID", "done-1");
        }
        TestHttp.post(base + "/generate", "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":2}}",
                "X-Session-ID", "done-2");
        double rate = detail("done-1").get("cached_token_rate").asDouble();
        assertEquals(200, TestHttp.post(base + "/finish_session?session_id=done-1", "").statusCode());
        assertEquals(200, TestHttp.post(base + "/finish_session?session_id=done-2", "").statusCode());

        assertEquals(404, TestHttp.get(base + "/sessions?session_id=done-1").statusCode());
        String scrape = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
        assertTrue(scrape.contains("vllm_router_sticky_session_turns_count 2"), scrape);
        assertTrue(scrape.contains("vllm_router_sticky_session_turns_sum 4.0"), scrape);
        assertTrue(scrape.contains("vllm_router_sticky_session_worker_changes_count 2"), scrape);
        assertTrue(scrape.contains("vllm_router_sticky_session_worker_changes_sum 0.0"), scrape);
        // Only the session whose worker reported cached tokens has a hit rate.
        assertTrue(scrape.contains("vllm_router_sticky_session_cached_token_rate_count 1"), scrape);
        assertTrue(scrape.contains("vllm_router_sticky_session_cached_token_rate_sum " + rate), scrape);
    }

    @Test
    void theDetailFormRefusesBadIdsAndNamesUnknownOnes() throws Exception {
        TestHttp.post(base + "/v1/completions", "{\"model\":\"mock\",\"prompt\":\"x\",\"max_tokens\":2}",
                "X-Session-ID", "kept");
        HttpResponse<String> unknown = TestHttp.get(base + "/sessions?session_id=nobody");
        assertEquals(404, unknown.statusCode());
        assertTrue(TestHttp.json(unknown).at("/error/message").asText().contains("'nobody' is not tracked"), unknown.body());
        HttpResponse<String> control = TestHttp.get(base + "/sessions?session_id=a%01b");
        assertEquals(400, control.statusCode());
        assertTrue(control.body().contains("control characters"), control.body());
        assertEquals(400, TestHttp.get(base + "/sessions?session_id=").statusCode());
        assertEquals(400, TestHttp.status(TestHttp.raw(router.port(),
                "GET /sessions?session_id=%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));

        JsonNode summary = TestHttp.json(TestHttp.get(base + "/sessions"));
        assertEquals(1, summary.get("active_sessions").asInt());
        assertEquals(1, detail("kept").get("turns").asInt());
    }

    private JsonNode detail(String id) throws Exception {
        HttpResponse<String> r = TestHttp.get(base + "/sessions?session_id=" + URLEncoder.encode(id, StandardCharsets.UTF_8));
        assertEquals(200, r.statusCode(), r.body());
        return TestHttp.json(r);
    }

    /** The usage object of the stream's last chunk that carries one. */
    private static JsonNode lastUsage(String sse) throws Exception {
        JsonNode usage = null;
        for (String line : sse.split("\n")) {
            if (line.startsWith("data: {")) {
                JsonNode chunk = TestHttp.JSON.readTree(line.substring(6));
                if (chunk.hasNonNull("usage")) {
                    usage = chunk.get("usage");
                }
            }
        }
        assertTrue(usage != null, sse);
        return usage;
    }
}
