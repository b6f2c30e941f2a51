package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.worker.CircuitBreaker;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.CapturedRequest;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/** Prefill/decode disaggregation: vLLM two-stage mode with sticky sessions per role, and bootstrap mode. */
@ExtendWith(NoLeaks.class)
class PdTest {
    static MockWorkers mock;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.builder().count(4).build());
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    private static Map<String, Object> pdConfig(String flag, Integer bootstrapPort) {
        Map<String, Object> cfg = Fixture.base(List.of());
        cfg.put(flag, true);
        java.util.ArrayList<Object> prefill = new java.util.ArrayList<>();
        prefill.add(java.util.Arrays.asList(mock.urls().get(0), bootstrapPort));
        prefill.add(java.util.Arrays.asList(mock.urls().get(1), bootstrapPort));
        cfg.put("prefill_urls", prefill);
        cfg.put("decode_urls", List.of(mock.urls().get(2), mock.urls().get(3)));
        return cfg;
    }

    /** Upstream's PD session test: each session keeps its (prefill, decode) pair and both roles balance independently. */
    @Test
    void twoStageStickySessionsPerRole() throws Exception {
        mock.workers().forEach(MockWorker::clearCaptured);
        try (RouterServer router = Fixture.start(pdConfig("vllm_pd_disaggregation", null))) {
            for (int turn = 0; turn < 3; turn++) {
                for (int s = 0; s < 4; s++) {
                    String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"pd-" + s + " turn " + turn
                            + "\"}],\"max_tokens\":3,\"x_keep\":[1,2]}";
                    HttpResponse<String> r = TestHttp.post(router.url() + "/v1/chat/completions", body,
                            "X-Session-ID", "pd-" + s);
                    assertEquals(200, r.statusCode(), r.body());
                }
            }
            for (int s = 0; s < 4; s++) {
                assertEquals(1, workersThatSaw("pd-" + s + " ", 0, 1).size(), "prefill pair changed for pd-" + s);
                assertEquals(1, workersThatSaw("pd-" + s + " ", 2, 3).size(), "decode pair changed for pd-" + s);
            }
            SessionStats stats = router.sessionStats();
            assertEquals(8, stats.activeSessions(), "4 sessions on each role");
            for (String url : mock.urls()) {
                assertEquals(2, stats.activeByWorker().getOrDefault(url, 0), url);
            }
            CapturedRequest decoded = mock.worker(2).captured("/v1/chat/completions").isEmpty()
                    ? mock.worker(3).captured("/v1/chat/completions").get(0)
                    : mock.worker(2).captured("/v1/chat/completions").get(0);
            JsonNode decodeBody = decoded.json();
            assertTrue(decodeBody.has("kv_transfer_params"), decoded.bodyText());
            assertTrue(decoded.bodyText().endsWith(",\"x_keep\":[1,2]}"), decoded.bodyText());
            assertTrue(decoded.header("x-request-id").startsWith("___prefill_addr_"));
            CapturedRequest prefilled = firstCaptured(0, 1);
            assertEquals(1, prefilled.json().get("max_tokens").asInt());
            assertTrue(prefilled.json().get("kv_transfer_params").get("do_remote_decode").asBoolean());

            for (int s = 0; s < 4; s++) {
                assertEquals(200, TestHttp.post(router.url() + "/finish_session?session_id=pd-" + s, "").statusCode());
            }
            assertEquals(0, router.sessionStats().activeSessions());
            HttpResponse<String> anonymous = TestHttp.post(router.url() + "/v1/completions",
                    "{\"model\":\"m\",\"prompt\":\"no session\",\"max_tokens\":2}");
            assertEquals(200, anonymous.statusCode(), anonymous.body());
            assertEquals(0, router.sessionStats().activeSessions());
        }
    }

    /** A non-streaming logprobs request gets the decode answer, read whole and merged, with its own length. */
    @Test
    void twoStageLogprobsRequestGetsTheMergedDecodeAnswer() throws Exception {
        try (RouterServer router = Fixture.start(pdConfig("vllm_pd_disaggregation", null))) {
            String body = "{\"model\":\"m\",\"prompt\":\"with logprobs\",\"max_tokens\":3,\"logprobs\":1,\"echo\":true}";
            HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", body, "X-Session-ID", "lp");
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(r.body().getBytes(java.nio.charset.StandardCharsets.UTF_8).length,
                    Integer.parseInt(r.headers().firstValue("content-length").orElseThrow()));
            JsonNode answer = TestHttp.json(r);
            assertTrue(Set.of(mock.worker(2).id(), mock.worker(3).id()).contains(answer.get("worker_id").asText()),
                    "the decode worker's answer");
            assertEquals(3, answer.get("choices").get(0).get("logprobs").get("token_logprobs").size(), r.body());
            assertTrue(answer.get("echo").has("kv_transfer_params"), "decode got the prefill's KV");
            assertTrue(ResilienceTest.eventually(() -> router.workers().all().stream().allMatch(w -> w.load() == 0)));
            router.finishSession("lp");
        }
    }

    @Test
    void clientLeavingDuringPrefillCancelsIt() throws Exception {
        mock.worker(0).knobs().hang(true);
        mock.worker(1).knobs().hang(true);
        try (RouterServer router = Fixture.start(pdConfig("vllm_pd_disaggregation", null))) {
            List<org.vllmrouter.core.worker.Worker> prefills = router.workers().all(
                    org.vllmrouter.core.worker.WorkerRole.PREFILL);
            String body = "{\"prompt\":\"leave early\",\"max_tokens\":2}";
            try (java.net.Socket socket = new java.net.Socket("127.0.0.1", router.port())) {
                socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Session-ID: gone\r\n"
                        + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                        .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                assertTrue(ResilienceTest.eventually(() -> prefills.stream().mapToInt(w -> w.load()).sum() == 1));
            }
            assertTrue(ResilienceTest.eventually(() -> prefills.stream().mapToInt(w -> w.load()).sum() == 0));
            assertTrue(ResilienceTest.eventually(() -> mock.worker(0).inFlight() + mock.worker(1).inFlight() == 0));
            router.finishSession("gone");
            assertEquals(0, router.sessionStats().activeSessions());
        } finally {
            mock.worker(0).knobs().hang(false);
            mock.worker(1).knobs().hang(false);
        }
    }

    @Test
    void bootstrapModeSendsBothWithBootstrapFields() throws Exception {
        mock.workers().forEach(MockWorker::clearCaptured);
        try (RouterServer router = Fixture.start(pdConfig("pd_disaggregation", 8998))) {
            String body = "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":2}}";
            HttpResponse<String> r = TestHttp.post(router.url() + "/generate", body);
            assertEquals(200, r.statusCode(), r.body());
            assertTrue(ResilienceTest.eventually(() -> firstCapturedOrNull(0, 1) != null));
            for (CapturedRequest seen : List.of(firstCaptured(0, 1), firstCaptured(2, 3))) {
                JsonNode json = seen.json();
                assertEquals("127.0.0.1", json.get("bootstrap_host").asText());
                assertEquals(8998, json.get("bootstrap_port").asInt());
                assertTrue(json.get("bootstrap_room").isNumber());
                assertTrue(seen.bodyText().endsWith(",\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":2}}"));
            }
            mock.workers().forEach(MockWorker::clearCaptured);
            HttpResponse<String> batch = TestHttp.post(router.url() + "/generate",
                    "{\"text\":[\"a\",\"b\",\"c\"],\"sampling_params\":{\"max_new_tokens\":1}}");
            assertEquals(200, batch.statusCode(), batch.body());
            JsonNode batched = firstCaptured(2, 3).json();
            assertEquals(3, batched.get("bootstrap_room").size());
            assertEquals(3, batched.get("bootstrap_host").size());
            assertEquals(8998, batched.get("bootstrap_port").get(2).asInt());
        }
    }

    /**
     * Both PD modes account a stage's worker call as the regular proxy does: each answer is a circuit-breaker
     * outcome in {@code vllm_router_cb_outcomes_total}, and only 2xx and 4xx count as success, so a prefill worker
     * answering 307 opens its circuit (threshold 1) and the next request finds no prefill worker.
     */
    @ParameterizedTest
    @ValueSource(strings = {"vllm_pd_disaggregation", "pd_disaggregation"})
    void prefillAnswersAreCircuitOutcomesByTheRegularRule(String mode) throws Exception {
        MockWorker prefill = mock.worker(0);
        Map<String, Object> cfg = Fixture.base(List.of());
        cfg.put(mode, true);
        cfg.put("prefill_urls", List.of(java.util.Arrays.asList(prefill.url(), null)));
        cfg.put("decode_urls", List.of(mock.worker(2).url()));
        cfg.put("cb_failure_threshold", 1);
        cfg.put("cb_timeout_duration_secs", 3600);
        String body = "{\"model\":\"m\",\"prompt\":\"pd circuit\",\"max_tokens\":2}";
        try (RouterServer router = Fixture.start(cfg)) {
            Worker prefillWorker = router.workers().get(prefill.url()).orElseThrow();
            assertEquals(200, TestHttp.post(router.url() + "/v1/completions", body, "X-Session-ID", "cb").statusCode());
            assertTrue(ResilienceTest.eventually(() -> scrape(router).contains(
                    "vllm_router_cb_outcomes_total{outcome=\"success\",worker=\"" + prefill.url() + "\"} 1.0")),
                    scrape(router));

            prefill.knobs().statusCode(307);
            TestHttp.post(router.url() + "/v1/completions", body, "X-Session-ID", "cb");
            assertTrue(ResilienceTest.eventually(() -> prefillWorker.circuitBreaker().state() == CircuitBreaker.State.OPEN),
                    "a 3xx answer is a failure");
            assertTrue(scrape(router).contains(
                    "vllm_router_cb_outcomes_total{outcome=\"failure\",worker=\"" + prefill.url() + "\"} 1.0"),
                    scrape(router));
            HttpResponse<String> next = TestHttp.post(router.url() + "/v1/completions", body, "X-Session-ID", "cb");
            assertEquals(503, next.statusCode(), next.body());
            assertTrue(ResilienceTest.eventually(() -> router.workers().all().stream().allMatch(w -> w.load() == 0)));
            router.finishSession("cb");
        } finally {
            prefill.knobs().statusCode(200);
        }
    }

    @Test
    void dataParallelRanksAreSeparateReplicas() throws Exception {
        MockWorker worker = mock.worker(0);
        worker.clearCaptured();
        Map<String, Object> cfg = Fixture.base(List.of(worker.url()));
        cfg.put("intra_node_data_parallel_size", 2);
        try (RouterServer router = Fixture.start(cfg)) {
            JsonNode listed = TestHttp.json(TestHttp.get(router.url() + "/list_workers"));
            assertEquals(List.of(worker.url() + "@0", worker.url() + "@1"),
                    List.of(listed.get("urls").get(0).asText(), listed.get("urls").get(1).asText()));
            for (int s = 0; s < 2; s++) {
                for (int turn = 0; turn < 2; turn++) {
                    assertEquals(200, TestHttp.post(router.url() + "/v1/completions",
                            "{\"prompt\":\"dp-" + s + " " + turn + "\"}", "X-Session-ID", "dp-" + s).statusCode());
                }
            }
            Set<String> ranks = new HashSet<>();
            for (CapturedRequest c : worker.captured("/v1/completions")) {
                ranks.add(c.header("x-data-parallel-rank"));
            }
            assertEquals(Set.of("0", "1"), ranks);
            assertEquals(1, router.sessionStats().activeByWorker().get(worker.url() + "@0"));
            assertEquals(1, router.sessionStats().activeByWorker().get(worker.url() + "@1"));
            router.finishSession("dp-0");
            router.finishSession("dp-1");
            assertEquals(200, TestHttp.post(router.url() + "/remove_worker?url=" + worker.url(), "").statusCode());
            assertEquals(0, TestHttp.json(TestHttp.get(router.url() + "/list_workers")).get("urls").size());
        }
    }

    private static String scrape(RouterServer router) {
        try {
            return TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static Set<String> workersThatSaw(String marker, int... indexes) {
        Set<String> ids = new HashSet<>();
        for (int i : indexes) {
            for (CapturedRequest c : mock.worker(i).captured()) {
                if (c.bodyText().contains(marker)) {
                    ids.add(mock.worker(i).id());
                }
            }
        }
        return ids;
    }

    private static CapturedRequest firstCaptured(int... indexes) {
        CapturedRequest found = firstCapturedOrNull(indexes);
        assertTrue(found != null, "no captured request");
        return found;
    }

    private static CapturedRequest firstCapturedOrNull(int... indexes) {
        for (int i : indexes) {
            for (CapturedRequest c : mock.worker(i).captured()) {
                if (!c.path().equals("/health")) {
                    return c;
                }
            }
        }
        return null;
    }
}
