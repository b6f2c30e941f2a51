package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;
import org.vllmrouter.server.kv.KvSources;
import org.vllmrouter.server.proxy.WorkerTls;

/** kv_aware over real sockets: mock workers publishing vLLM KV events, their render API, a kv_aware router. */
@ExtendWith(NoLeaks.class)
class KvAwareTest {
    private static final int BLOCK = 16;
    private static final Logger KV_SOURCES_LOG = Logger.getLogger(KvSources.class.getName());
    private MockWorkers mock;
    private RouterServer router;

    @AfterEach
    void stop() {
        if (router != null) {
            router.close();
        }
        if (mock != null) {
            mock.close();
        }
    }

    private void start(MockConfig.Builder workers) throws Exception {
        start(workers, false);
    }

    /** {@code staticSources}: the router is told the publishers by flag instead of asking the workers. */
    private void start(MockConfig.Builder workers, boolean staticSources) throws Exception {
        start(workers, staticSources, Map.of());
    }

    private void start(MockConfig.Builder workers, boolean staticSources, Map<String, Object> extra) throws Exception {
        mock = MockWorkers.start(workers.all(k -> k.kvEvents(true).blockSize(BLOCK)).build());
        Map<String, Object> cfg = Fixture.base(mock.urls());
        cfg.put("policy", "kv_aware");
        cfg.putAll(extra);
        if (staticSources) {
            cfg.put("kv_event_source", mock.workers().stream().map(w -> w.url() + "=" + w.kvEvents().endpoint()).toList());
            cfg.put("kv_event_replay_source",
                    mock.workers().stream().map(w -> w.url() + "=" + w.kvEvents().replayEndpoint()).toList());
            cfg.put("kv_event_model", "mock");
            cfg.put("kv_event_block_size", BLOCK);
        }
        router = Fixture.start(cfg);
        assertTrue(ResilienceTest.eventually(() -> router.kvSources().sources().size() == mock.urls().size()),
                "every worker's KV source is subscribed: " + router.kvSources().sources());
    }

    /** A prompt of about 100 mock tokens (6 full blocks) that no other prompt of these tests starts with. */
    private static String completion(String seed) {
        return "{\"model\":\"mock\",\"max_tokens\":1,\"prompt\":\"" + (seed + " lorem ipsum dolor ").repeat(16) + "\"}";
    }

    private HttpResponse<String> viaRouter(String body) throws Exception {
        return TestHttp.post(router.url() + "/v1/completions", body);
    }

    private String scrape() {
        try {
            return TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private double metric(String name, String... labels) {
        for (String line : scrape().split("\n")) {
            if (line.startsWith(name + "{") && List.of(labels).stream().allMatch(line::contains)) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return 0;
    }

    @Test
    void aRepeatedLongPromptGoesToTheWorkerThatHoldsIt() throws Exception {
        start(MockConfig.builder().count(3));
        aPromptHeldByTheThirdWorkerGoesThere();
    }

    @Test
    void staticSourcesFromTheFlagsRouteTheSameWay() throws Exception {
        start(MockConfig.builder().count(3), true);
        aPromptHeldByTheThirdWorkerGoesThere();
        assertEquals(0, mock.worker(0).captured("/kv_event_sources").size(), "static sources are not asked for");
    }

    @Test
    void aVllmWithoutServerInfoIsSubscribedWithTheBlockSizeOfItsMetrics() throws Exception {
        start(MockConfig.builder().count(3).all(k -> k.noServerInfo(true)));
        aPromptHeldByTheThirdWorkerGoesThere();
        assertEquals(1, mock.worker(2).captured("/metrics").size(), "the block size came from /metrics");
        assertEquals(1, mock.worker(2).captured("/v1/models").size(), "the model came from /v1/models");
    }

    @Test
    void aMalformedMetricsAnswerSubscribesNothingWarnsAndRequestsAreServed() throws Exception {
        List<String> warned = Collections.synchronizedList(new ArrayList<>());
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                warned.add(record.getMessage());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        KV_SOURCES_LOG.addHandler(capture);
        try {
            mock = MockWorkers.start(MockConfig.builder().count(2).all(k -> k.kvEvents(true).blockSize(BLOCK))
                    .worker(1, k -> k.noServerInfo(true).metricsText("vllm:cache_config_info{block_size=16} 1.0\n"))
                    .build());
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("policy", "kv_aware");
            router = Fixture.start(cfg);
            String bad = mock.urls().get(1);
            String warning = "No KV events from " + bad + ", kv_aware gives it no prefix credit: GET /get_server_info"
                    + " answered 404; /metrics vllm:cache_config_info has a malformed label set";
            assertTrue(ResilienceTest.eventually(() -> warned.contains(warning)), warned.toString());
        } finally {
            KV_SOURCES_LOG.removeHandler(capture);
        }
        assertTrue(ResilienceTest.eventually(() -> !router.kvSources().sources().isEmpty()), "the first is subscribed");
        assertEquals(List.of(mock.urls().get(0)), router.kvSources().sources().stream().map(s -> s.worker()).toList());

        String body = completion("held-by-the-unsubscribed");
        assertEquals(200, TestHttp.post(mock.urls().get(1) + "/v1/completions", body).statusCode());
        HttpResponse<String> r = viaRouter(body);
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(mock.worker(0).id(), r.headers().firstValue("X-Worker-Id").orElseThrow(),
                "the holder gets no credit: load decides, and the first idle worker serves");
        assertEquals(1.0, metric("vllm_router_kv_placement_lookups_total", "result=\"miss\""));
    }

    private void aPromptHeldByTheThirdWorkerGoesThere() throws Exception {
        String body = completion("held-by-the-third");
        holdOn(2, body);

        HttpResponse<String> r = viaRouter(body);
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(mock.worker(2).id(), r.headers().firstValue("X-Worker-Id").orElseThrow());
        JsonNode usage = TestHttp.json(r).get("usage");
        assertTrue(usage.at("/prompt_tokens_details/cached_tokens").asInt() >= 5 * BLOCK, usage.toString());
        assertEquals(1.0, metric("vllm_router_kv_placement_lookups_total", "result=\"hit\""));
        assertEquals(1.0, metric("vllm_router_prefix_routing_decisions_total", "outcome=\"prefix_cost\""));
    }

    /** Sends {@code body} to worker {@code index} directly and waits until the router has its KV events. */
    private void holdOn(int index, String body) throws Exception {
        String holder = mock.urls().get(index);
        // A batch published before the subscription was connected comes back by replay once a later one shows the
        // gap: other prompts make those later batches.
        String stored = "worker=\"" + holder + "\"";
        double before = metric("vllm_router_kv_events_applied_total", stored, "type=\"stored\"");
        assertEquals(200, TestHttp.post(holder + "/v1/completions", body).statusCode());
        int[] fillers = {0};
        assertTrue(ResilienceTest.eventually(() -> {
            try {
                if (metric("vllm_router_kv_events_applied_total", stored, "type=\"stored\"") > before) {
                    return true;
                }
                TestHttp.post(holder + "/v1/completions", completion("filler-" + fillers[0]++));
                return false;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }));
    }

    /** vLLM PD mode: workers 0 and 1 prefill and publish KV events, named by --pd-kv-events; worker 2 decodes. */
    private void startPd(MockConfig.Builder workers) throws Exception {
        mock = MockWorkers.start(workers.count(3)
                .worker(0, k -> k.kvEvents(true).blockSize(BLOCK))
                .worker(1, k -> k.kvEvents(true).blockSize(BLOCK)).build());
        List<String> urls = mock.urls();
        Map<String, Object> cfg = Fixture.base(List.of());
        cfg.put("vllm_pd_disaggregation", true);
        cfg.put("prefill_policy", "kv_aware");
        cfg.put("prefill_urls", List.of(Arrays.asList(urls.get(0), null), Arrays.asList(urls.get(1), null)));
        cfg.put("decode_urls", List.of(urls.get(2)));
        cfg.put("pd_kv_events", List.of(urls.get(0) + "=" + mock.worker(0).kvEvents().endpoint(),
                urls.get(1) + "=" + mock.worker(1).kvEvents().endpoint()));
        router = Fixture.start(cfg);
        assertTrue(ResilienceTest.eventually(() -> router.kvSources().sources().size() == 2),
                "both prefill workers' KV sources are subscribed: " + router.kvSources().sources());
    }

    @Test
    void inPdModeARepeatedLongPromptIsPrefilledByThePrefillWorkerThatHoldsIt() throws Exception {
        startPd(MockConfig.builder());
        String body = completion("held-by-the-second-prefill-worker");
        holdOnOnceSubscribed(1, body);

        for (int turn = 0; turn < 2; turn++) {
            HttpResponse<String> r = viaRouter(body);
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(mock.worker(2).id(), r.headers().firstValue("X-Worker-Id").orElseThrow(), "decoded");
        }
        assertEquals(0, prefills(0), "the idle first prefill worker does not hold the prompt");
        assertEquals(2, prefills(1), "both turns are prefilled where the prompt is held");
        assertEquals(2.0, metric("vllm_router_prefix_routing_decisions_total", "stage=\"prefill\"",
                "outcome=\"prefix_cost\""));

        assertEquals(200, viaRouter(completion("held-by-no-prefill-worker")).statusCode());
        assertEquals(1, prefills(0), "with no holder, load decides and the first idle worker prefills");
    }

    @Test
    void inPdModeAFailedRenderLeavesThePrefillChoiceToLoad() throws Exception {
        // The first prefill worker renders (the first candidate with KV sources); its first inference-route call fails.
        startPd(MockConfig.builder().worker(0, k -> k.failFirstN(1)));
        HttpResponse<String> r = viaRouter(completion("pd-render-fails"));
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(1, mock.worker(0).captured("/v1/completions/render").size(), "one render call, which failed");
        assertEquals(1, prefills(0), "idle prefill workers tie on load: the first prefills");
        assertEquals(1.0, metric("vllm_router_kv_routing_inputs_total", "result=\"render_failed\""));
        assertEquals(1.0, metric("vllm_router_prefix_routing_decisions_total", "stage=\"prefill\"",
                "outcome=\"missing_tokens\""));
    }

    /** Router requests prefilled by worker {@code index} (its direct requests carry no {@code kv_transfer_params}). */
    private long prefills(int index) {
        return mock.worker(index).captured("/v1/completions").stream()
                .filter(c -> new String(c.body(), StandardCharsets.UTF_8).contains("do_remote_decode")).count();
    }

    /**
     * Like {@link #holdOn}, for sources without replay: a batch published before the subscription is connected is
     * lost, so other prompts go first until their events arrive, and then {@code body}.
     */
    private void holdOnOnceSubscribed(int index, String body) throws Exception {
        String holder = mock.urls().get(index);
        String stored = "worker=\"" + holder + "\"";
        int[] fillers = {0};
        assertTrue(ResilienceTest.eventually(() -> {
            try {
                if (metric("vllm_router_kv_events_applied_total", stored, "type=\"stored\"") > 0) {
                    return true;
                }
                TestHttp.post(holder + "/v1/completions", completion("filler-" + fillers[0]++));
                return false;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }));
        double before = metric("vllm_router_kv_events_applied_total", stored, "type=\"stored\"");
        assertEquals(200, TestHttp.post(holder + "/v1/completions", body).statusCode());
        assertTrue(ResilienceTest.eventually(
                () -> metric("vllm_router_kv_events_applied_total", stored, "type=\"stored\"") > before));
    }

    @Test
    void aSessionStaysOnItsWorkerWithinTheAffinityTtlAndFollowsResidencyAfterIt() throws Exception {
        int ttlSecs = 3;
        start(MockConfig.builder().count(3), false, Map.of("kv_aware_session_affinity_ttl_secs", ttlSecs));
        String second = completion("second-turn-held-by-the-third");
        String third = completion("third-turn-held-by-the-third");
        holdOn(2, second);
        holdOn(2, third);

        HttpResponse<String> first = TestHttp.post(router.url() + "/v1/completions", completion("first-turn"),
                "X-Session-ID", "conversation-1");
        assertEquals(mock.worker(0).id(), first.headers().firstValue("X-Worker-Id").orElseThrow(), "no holder: first");
        HttpResponse<String> unbound = TestHttp.post(router.url() + "/v1/completions", second,
                "thread-id", "another-conversation");
        assertEquals(mock.worker(2).id(), unbound.headers().firstValue("X-Worker-Id").orElseThrow(),
                "a new session follows residency");
        HttpResponse<String> sticky = TestHttp.post(router.url() + "/v1/completions", second,
                "X-Session-ID", "conversation-1");
        assertEquals(200, sticky.statusCode(), sticky.body());
        assertEquals(mock.worker(0).id(), sticky.headers().firstValue("X-Worker-Id").orElseThrow(),
                "the session stays on its worker although the third holds the prompt");
        assertEquals(1.0, metric("vllm_router_prefix_routing_decisions_total", "outcome=\"sticky_hit\""));

        Thread.sleep(Duration.ofSeconds(ttlSecs).plusMillis(500));
        HttpResponse<String> expired = TestHttp.post(router.url() + "/v1/completions", third,
                "X-Session-ID", "conversation-1");
        assertEquals(mock.worker(2).id(), expired.headers().firstValue("X-Worker-Id").orElseThrow(),
                "idle past the TTL, the session is routed by residency again");
    }

    @Test
    void theStatusPageShowsEachWorkersShareOfPromptTokensItHeld() throws Exception {
        start(MockConfig.builder().count(3));
        String body = completion("held-for-the-status-page");
        holdOn(2, body);
        assertEquals(mock.worker(2).id(), viaRouter(body).headers().firstValue("X-Worker-Id").orElseThrow());
        assertEquals(mock.worker(0).id(), viaRouter(completion("held-by-nobody")).headers().firstValue("X-Worker-Id")
                .orElseThrow());

        JsonNode state = TestHttp.json(TestHttp.get(router.url() + "/dashboard/state"));
        assertTrue(state.get("kv_cache_hit_rate_reported").asBoolean(), state.toString());
        JsonNode workers = state.get("workers");
        double held = workers.get(2).get("kv_cache_hit_rate").asDouble();
        assertTrue(held > 0.8 && held < 1.0, "all full blocks before the last token: " + held);
        assertEquals(0.0, workers.get(0).get("kv_cache_hit_rate").asDouble(), state.toString());
        assertTrue(workers.get(1).get("kv_cache_hit_rate").isNull(), "sent nothing, no rate: " + state);
    }

    @Test
    void withNoHolderIdleWorkersAreChosenByTheFewestBlocksTheyHoldSoNewPromptsSpread() throws Exception {
        start(MockConfig.builder().count(3));
        Set<String> served = new HashSet<>();
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> r = viaRouter(completion("fresh-" + i));
            assertEquals(200, r.statusCode(), r.body());
            String id = r.headers().firstValue("X-Worker-Id").orElseThrow();
            served.add(id);
            String url = mock.workers().stream().filter(w -> w.id().equals(id)).findFirst().orElseThrow().url();
            String stored = "worker=\"" + url + "\"";
            assertTrue(ResilienceTest.eventually(
                    () -> metric("vllm_router_kv_events_applied_total", stored, "type=\"stored\"") > 0));
        }
        assertEquals(3, served.size(), "each new prompt went to a worker holding nothing yet: " + served);
    }

    @Test
    void aFailedRenderLeavesTheChoiceToLoadAndTheRequestIsAnswered() throws Exception {
        // The first worker renders (the first candidate with KV sources); its first inference-route call fails.
        start(MockConfig.builder().count(2).worker(0, k -> k.failFirstN(1)));
        String body = completion("render-fails");
        HttpResponse<String> r = viaRouter(body);
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(1, mock.worker(0).captured("/v1/completions/render").size(), "one render call, which failed");
        assertEquals(body, mock.worker(0).captured("/v1/completions").get(0).bodyText(), "forwarded unchanged");
        assertEquals(1.0, metric("vllm_router_kv_routing_inputs_total", "result=\"render_failed\""));
        assertEquals(1.0, metric("vllm_router_prefix_routing_decisions_total", "outcome=\"missing_tokens\""));
    }

    @Test
    void aSourceThatNeverAnswersGivesNoCreditAndRequestsAreAnswered() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            mock = MockWorkers.start(MockConfig.builder().count(2).all(k -> k.kvEvents(true).blockSize(BLOCK)).build());
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("policy", "kv_aware");
            String endpoint = "tcp://127.0.0.1:" + silent.getLocalPort();
            cfg.put("kv_event_source", List.of(mock.urls().get(0) + "=" + endpoint, mock.urls().get(1) + "=" + endpoint));
            cfg.put("kv_event_model", "mock");
            router = Fixture.start(cfg);
            String body = completion("nobody-hears");
            for (int i = 0; i < 2; i++) {
                HttpResponse<String> r = viaRouter(body);
                assertEquals(200, r.statusCode(), r.body());
                assertEquals(mock.worker(i).id(), r.headers().firstValue("X-Worker-Id").orElseThrow(),
                        "no credit and no blocks known anywhere: idle workers take the prompt in turn");
            }
            assertEquals(2.0, metric("vllm_router_kv_placement_lookups_total", "result=\"miss\""));
        }
    }

    @Test
    void aRemovedWorkersSubscriberStops() throws Exception {
        start(MockConfig.builder().count(2));
        String gone = mock.urls().get(1);
        HttpResponse<String> removed = TestHttp.post(router.url() + "/remove_worker?url=" + gone, "");
        assertEquals(200, removed.statusCode(), removed.body());
        assertTrue(ResilienceTest.eventually(() -> router.kvSources().sources().stream()
                .noneMatch(s -> s.worker().equals(gone))), router.kvSources().sources().toString());
        assertEquals(1, router.kvSources().sources().size());
    }

    @Test
    void renderCallsReuseTheirConnectionToTheWorker() throws Exception {
        start(MockConfig.builder().count(1));
        int requests = 12;
        long before = mock.worker(0).acceptedConnections();
        for (int i = 0; i < requests; i++) {
            HttpResponse<String> r = viaRouter(completion("reuse-" + i));
            assertEquals(200, r.statusCode(), r.body());
        }
        assertEquals(requests, mock.worker(0).captured("/v1/completions/render").size());
        assertEquals(requests, (int) metric("vllm_router_kv_routing_inputs_total", "result=\"tokens\""));
        assertTrue(scrape().contains("vllm_router_kv_render_seconds_count " + requests + ".0")
                || scrape().contains("vllm_router_kv_render_seconds_count " + requests + "\n"), "each call timed");
        long opened = mock.worker(0).acceptedConnections() - before;
        // Render calls and relayed requests together: one connection per router event loop each, not one per call.
        assertTrue(opened < requests, opened + " connections for " + requests + " render calls and " + requests
                + " relayed requests");
    }

    @Test
    void renderCallsToAnHttpsWorkerShakeHandsOnceAConnection(@TempDir Path dir) throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(1).all(k -> k.kvEvents(true).blockSize(BLOCK)).build());
        TestPki ca = TestPki.newCa("kv_aware test CA");
        try (TlsFront front = TlsFront.start(ca.issue("localhost").serverContext(), mock.worker(0).port())) {
            Map<String, Object> cfg = Fixture.base(List.of(front.url()));
            cfg.put("policy", "kv_aware");
            router = RouterServer.start(Fixture.settings(cfg),
                    RouterServer.Options.DEFAULTS.withWorkerTls(WorkerTls.trusting(ca.writeCaBundle(dir))));
            assertTrue(ResilienceTest.eventually(() -> router.kvSources().sources().size() == 1),
                    "the https worker's KV source is subscribed");
            int requests = 12;
            int before = front.handshakes();
            for (int i = 0; i < requests; i++) {
                HttpResponse<String> r = viaRouter(completion("tls-" + i));
                assertEquals(200, r.statusCode(), r.body());
            }
            assertEquals(requests, (int) metric("vllm_router_kv_routing_inputs_total", "result=\"tokens\""),
                    "every render call was answered over TLS");
            int handshakes = front.handshakes() - before;
            assertTrue(handshakes < requests, handshakes + " TLS handshakes for " + requests
                    + " render calls and " + requests + " relayed requests");
            router.close();
            router = null;
        }
    }
}
