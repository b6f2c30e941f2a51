package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.CapturedRequest;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/** The engine-control fan-outs a trainer sends through the router, and the pause state they leave. */
@ExtendWith(NoLeaks.class)
class EngineControlTest {
    static final String[] AUTH = {"Authorization", "Bearer admin-secret"};
    static MockWorkers mock;
    static RouterServer router;
    static String base;

    @BeforeAll
    static void start() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(2).all(k -> k.latencyMs(20)).build());
        Map<String, Object> cfg = Fixture.base(mock.urls());
        cfg.put("admin_api_key", "admin-secret");
        cfg.put("request_timeout_secs", 60);
        router = Fixture.start(cfg);
        base = router.url();
    }

    @AfterAll
    static void stop() {
        router.close();
        mock.close();
    }

    @BeforeEach
    void resumed() throws Exception {
        TestHttp.post(base + "/resume", "", AUTH);
        for (MockWorker w : mock.workers()) {
            w.engineState().failWeightUpdates(false);
            w.clearCaptured();
        }
    }

    @Test
    void rolloutRunsAcrossPauseUpdateResumeWithoutFailuresOrMovedSessions() throws Exception {
        int sessions = 16;
        Map<String, String> workerOf = new ConcurrentHashMap<>();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger moved = new AtomicInteger();
        AtomicInteger staleAfterResume = new AtomicInteger();
        AtomicInteger sentAfterResume = new AtomicInteger();
        AtomicBoolean resumed = new AtomicBoolean();
        AtomicBoolean stop = new AtomicBoolean();
        long startVersion = mock.worker(0).engineState().weightVersion();
        ExecutorService clients = Executors.newFixedThreadPool(sessions);
        List<CompletableFuture<Void>> loops = new ArrayList<>();
        for (int s = 0; s < sessions; s++) {
            String session = "rollout-" + s;
            loops.add(CompletableFuture.runAsync(() -> {
                while (!stop.get()) {
                    boolean afterResume = resumed.get();
                    try {
                        HttpResponse<String> r = TestHttp.post(base + "/v1/completions",
                                "{\"prompt\":\"turn of " + session + "\",\"max_tokens\":4}", "X-Session-ID", session);
                        if (r.statusCode() != 200) {
                            failed.incrementAndGet();
                            continue;
                        }
                        JsonNode answer = TestHttp.json(r);
                        String worker = answer.get("worker_id").asText();
                        if (!worker.equals(workerOf.computeIfAbsent(session, k -> worker))) {
                            moved.incrementAndGet();
                        }
                        if ("abort".equals(answer.get("choices").get(0).path("finish_reason").asText())) {
                            failed.incrementAndGet();
                        }
                        if (afterResume) {
                            sentAfterResume.incrementAndGet();
                            if (answer.get("weight_version").asLong() != startVersion + 1) {
                                staleAfterResume.incrementAndGet();
                            }
                        }
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    }
                }
            }, clients));
        }
        while (workerOf.size() < sessions) {
            Thread.sleep(10);
        }
        HttpResponse<String> paused = TestHttp.post(base + "/pause?mode=keep", "", AUTH);
        assertEquals(200, paused.statusCode(), paused.body());
        HttpResponse<String> update = TestHttp.post(base + "/update_weights",
                "{\"weight_version\":" + (startVersion + 1) + "}", AUTH);
        assertEquals(200, update.statusCode(), update.body());
        HttpResponse<String> resume = TestHttp.post(base + "/resume", "", AUTH);
        assertEquals(200, resume.statusCode(), resume.body());
        resumed.set(true);
        while (sentAfterResume.get() < 2 * sessions) {
            Thread.sleep(10);
        }
        stop.set(true);
        CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        clients.shutdown();
        assertEquals(0, failed.get(), "failed turns");
        assertEquals(0, moved.get(), "turns answered by another worker than their session's");
        assertEquals(0, staleAfterResume.get(), "turns sent after the resume answered with old weights");
        for (MockWorker w : mock.workers()) {
            assertEquals(startVersion + 1, w.engineState().weightVersion());
        }
    }

    @Test
    void aTurnForAPausedWorkerWaitsThereUntilResume() throws Exception {
        String session = "held-session";
        JsonNode first = TestHttp.json(TestHttp.post(base + "/v1/completions", "{\"prompt\":\"a\"}",
                "X-Session-ID", session));
        String worker = first.get("worker_id").asText();
        MockWorker pinned = mock.workers().stream().filter(w -> w.id().equals(worker)).findFirst().orElseThrow();
        HttpResponse<String> pause = TestHttp.post(base + "/pause?mode=keep&worker=" + pinned.url(), "", AUTH);
        assertEquals(200, pause.statusCode(), pause.body());
        assertEquals(1, TestHttp.json(pause).get("results").size());
        pinned.clearCaptured();
        CompletableFuture<HttpResponse<String>> held = TestHttp.CLIENT.sendAsync(HttpRequest.newBuilder(
                        URI.create(base + "/v1/completions")).header("X-Session-ID", session)
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"b\"}")).build(), HttpResponse.BodyHandlers.ofString());
        while (routerLoad(pinned.url()) == 0) {
            Thread.sleep(10);
        }
        assertFalse(held.isDone());
        assertTrue(pinned.captured("/v1/completions").isEmpty(), "the router held the turn, the worker never saw it");
        assertEquals(200, TestHttp.get(base + "/health").statusCode(), "a paused worker is not unhealthy");
        assertEquals(200, TestHttp.post(base + "/resume?worker=" + pinned.url(), "", AUTH).statusCode());
        HttpResponse<String> answer = held.get(30, TimeUnit.SECONDS);
        assertEquals(200, answer.statusCode(), answer.body());
        assertEquals(worker, TestHttp.json(answer).get("worker_id").asText());
    }

    @Test
    void anAbortingPauseEndsInFlightTurnsAsTheEngineDoesAndSessionsStayPinned() throws Exception {
        String session = "aborted-session";
        String worker = TestHttp.json(TestHttp.post(base + "/v1/completions", "{\"prompt\":\"a\"}",
                "X-Session-ID", session)).get("worker_id").asText();
        MockWorker pinned = mock.workers().stream().filter(w -> w.id().equals(worker)).findFirst().orElseThrow();
        pinned.knobs().latencyMs(60_000);
        try {
            pinned.clearCaptured();
            CompletableFuture<HttpResponse<String>> inFlight = TestHttp.CLIENT.sendAsync(HttpRequest.newBuilder(
                            URI.create(base + "/v1/completions")).header("X-Session-ID", session)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"b\"}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            while (pinned.captured("/v1/completions").isEmpty()) {
                Thread.sleep(5);
            }
            assertEquals(200, TestHttp.post(base + "/pause?mode=abort", "", AUTH).statusCode());
            HttpResponse<String> aborted = inFlight.get(30, TimeUnit.SECONDS);
            assertEquals(200, aborted.statusCode(), aborted.body());
            assertEquals("abort", TestHttp.json(aborted).get("choices").get(0).get("finish_reason").asText());
            assertEquals(1, pinned.captured("/v1/completions").size(), "an aborted turn is not retried");
        } finally {
            pinned.knobs().latencyMs(20);
        }
        assertEquals(200, TestHttp.post(base + "/resume", "", AUTH).statusCode());
        assertEquals(worker, TestHttp.json(TestHttp.post(base + "/v1/completions", "{\"prompt\":\"c\"}",
                "X-Session-ID", session)).get("worker_id").asText(), "the session kept its worker");
    }

    @Test
    void anUpdateThatFailsOnOneWorkerNamesIt() throws Exception {
        mock.worker(1).engineState().failWeightUpdates(true);
        HttpResponse<String> r = TestHttp.post(base + "/update_weights", "{\"names\":[\"w\"]}", AUTH);
        assertEquals(502, r.statusCode(), r.body());
        JsonNode body = TestHttp.json(r);
        assertFalse(body.get("success").asBoolean());
        assertEquals(List.of(mock.urls().get(1)), List.of(body.get("failed").get(0).asText()));
        assertEquals(1, body.get("failed").size());
        JsonNode results = body.get("results");
        assertEquals(mock.urls().get(0), results.get(0).get("worker").asText());
        assertEquals(200, results.get(0).get("status").asInt());
        assertEquals(mock.urls().get(1), results.get(1).get("worker").asText());
        assertEquals(500, results.get(1).get("status").asInt());
        assertTrue(results.get(1).get("body").get("error").get("message").asText().contains("weight update failed"));
        assertEquals(1, mock.worker(1).captured("/update_weights").size(), "sent once, never retried");
    }

    @Test
    void everyControlCallReachesEveryWorkerWithItsBody() throws Exception {
        String rpc = "{\"method\":\"skyrl_update\",\"kwargs\":{\"names\":[\"a\"],\"dtype\":\"bf16\"}}";
        HttpResponse<String> r = TestHttp.post(base + "/collective_rpc", rpc, AUTH);
        assertEquals(200, r.statusCode(), r.body());
        for (MockWorker w : mock.workers()) {
            List<CapturedRequest> got = w.captured("/collective_rpc");
            assertEquals(1, got.size());
            assertEquals(rpc, new String(got.get(0).body(), java.nio.charset.StandardCharsets.UTF_8));
        }
        for (String path : List.of("/sleep?level=1", "/wake_up?tags=weights", "/reset_prefix_cache",
                "/init_weight_transfer_engine", "/fetch_weights")) {
            assertEquals(200, TestHttp.post(base + path, path.startsWith("/init") ? "{}" : "", AUTH).statusCode(), path);
        }
        for (String path : List.of("/v1/load_lora_adapter", "/v1/unload_lora_adapter")) {
            HttpResponse<String> lora = TestHttp.post(base + path, "{\"lora_name\":\"a\",\"lora_path\":\"/p\"}", AUTH);
            assertEquals(200, lora.statusCode(), lora.body());
            for (MockWorker w : mock.workers()) {
                assertEquals(1, w.captured(path).size(), path);
            }
        }
        JsonNode size = TestHttp.json(TestHttp.get(base + "/get_world_size", AUTH));
        assertEquals(2, size.get("world_size").asInt());
        JsonNode one = TestHttp.json(TestHttp.get(base + "/get_world_size?worker=" + mock.urls().get(0), AUTH));
        assertEquals(1, one.get("world_size").asInt());
        assertEquals(1, one.get("results").size());
        assertTrue(mock.worker(1).captured("/sleep").get(0).uri().contains("level=1"));
    }

    @Test
    void badInputIsRefusedAndNothingIsSent() throws Exception {
        assertEquals(401, TestHttp.post(base + "/pause", "").statusCode());
        HttpResponse<String> mode = TestHttp.post(base + "/pause?mode=freeze", "", AUTH);
        assertEquals(400, mode.statusCode());
        assertTrue(mode.body().contains("freeze"), mode.body());
        assertEquals(400, TestHttp.post(base + "/pause?clear_cache=maybe", "", AUTH).statusCode());
        assertEquals(400, TestHttp.post(base + "/sleep?level=deep", "", AUTH).statusCode());
        assertEquals(400, TestHttp.post(base + "/collective_rpc", "not json", AUTH).statusCode());
        assertEquals(400, TestHttp.post(base + "/update_weights", "", AUTH).statusCode());
        HttpResponse<String> unknown = TestHttp.post(base + "/pause?mode=keep&worker=http://127.0.0.1:1", "", AUTH);
        assertEquals(404, unknown.statusCode());
        assertTrue(unknown.body().contains("not registered"), unknown.body());
        assertEquals(405, TestHttp.get(base + "/pause", AUTH).statusCode());
        for (MockWorker w : mock.workers()) {
            assertTrue(w.captured().stream().noneMatch(c -> !c.path().equals("/health")), w.captured().toString());
            assertFalse(w.engineState().isPaused());
        }
        assertEquals(200, TestHttp.post(base + "/v1/completions", "{\"prompt\":\"x\"}").statusCode(),
                "a refused pause holds nothing");
    }

    private static int routerLoad(String url) throws Exception {
        for (JsonNode w : TestHttp.json(TestHttp.get(base + "/workers", AUTH)).get("workers")) {
            if (w.get("url").asText().equals(url)) {
                return w.get("load").asInt();
            }
        }
        throw new AssertionError("no worker " + url);
    }
}
