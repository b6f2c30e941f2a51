package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** Fault knobs, set at start and changed at runtime through the handle. */
class FaultKnobsTest {

    private static final String COMPLETION = "{\"prompt\":\"hi\"}";

    private static int status(String url) throws Exception {
        return Http.post(url + "/v1/completions", COMPLETION).statusCode();
    }

    @Test
    void statusCodeFailFirstNAndRandomFailRate() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(3)
                .worker(0, k -> k.statusCode(503))
                .worker(1, k -> k.failFirstN(2))
                .worker(2, k -> k.randomFailRate(1.0)).build())) {
            HttpResponse<String> forced = Http.post(mock.urls().get(0) + "/v1/completions", COMPLETION);
            assertEquals(503, forced.statusCode());
            assertEquals(503, Http.json(forced).get("error").get("code").asInt());
            assertEquals(200, Http.get(mock.urls().get(0) + "/health").statusCode(), "health is not faulted");

            assertEquals(500, status(mock.urls().get(1)));
            assertEquals(500, status(mock.urls().get(1)));
            assertEquals(200, status(mock.urls().get(1)));

            assertEquals(500, status(mock.urls().get(2)));
            mock.worker(2).knobs().randomFailRate(0.0);
            assertEquals(200, status(mock.urls().get(2)));
        }
    }

    @Test
    void runtimeKnobsTakeEffectOnTheNextRequest() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
            String url = mock.urls().get(1);
            assertEquals(200, status(url));
            mock.worker(1).knobs().statusCode(500);
            assertEquals(500, status(url));
            mock.worker(1).knobs().statusCode(200).healthy(false);
            assertEquals(500, Http.get(url + "/health").statusCode());
            assertEquals("bad", Http.get(url + "/health").body());
            mock.worker(1).knobs().healthy(true);
            assertEquals(200, Http.get(url + "/health").statusCode());
            assertEquals(200, status(mock.urls().get(0)), "other workers are unaffected");
        }
    }

    @Test
    void healthFailsAfterConfiguredTime() throws Exception {
        // The first probe must land inside the healthy window: make it long enough that a loaded machine
        // cannot miss it, then wait for the flip instead of sleeping a fixed time.
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.healthFailAfterMs(3_000)).build())) {
            String health = mock.urls().get(0) + "/health";
            assertEquals(200, Http.get(health).statusCode());
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            int status = 200;
            while (status == 200 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                status = Http.get(health).statusCode();
            }
            assertEquals(500, status);
        }
    }

    @Test
    void hangNeverAnswersButCountsInFlight() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.single())) {
            MockWorker w = mock.worker(0);
            assertEquals(200, status(w.url()));
            w.knobs().hang(true);
            w.clearCaptured();
            // No client timeout here: a client that gives up closes its connection, which ends the
            // in-flight request on the worker. Wait until the worker has the request instead.
            HttpRequest req = HttpRequest.newBuilder(URI.create(w.url() + "/v1/completions"))
                    .POST(HttpRequest.BodyPublishers.ofString(COMPLETION)).build();
            CompletableFuture<HttpResponse<String>> pending =
                    Http.CLIENT.sendAsync(req, HttpResponse.BodyHandlers.ofString());
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (w.captured("/v1/completions").isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(1, w.captured("/v1/completions").size(), "received, just not answered");
            assertEquals(1, w.inFlight());
            assertFalse(pending.isDone(), "a hanging worker never answers");
            assertEquals(200, Http.get(w.url() + "/health").statusCode());
            pending.cancel(true);

            w.knobs().hang(false).hangHealth(true);
            HttpRequest health = HttpRequest.newBuilder(URI.create(w.url() + "/health"))
                    .timeout(Duration.ofMillis(300)).GET().build();
            assertThrows(HttpTimeoutException.class, () -> Http.CLIENT.send(health, HttpResponse.BodyHandlers.ofString()));
            assertEquals(200, status(w.url()));
        }
    }

    @Test
    void crashOnRequestClosesTheWorker() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2)
                .worker(0, k -> k.crashOnRequest(true)).build())) {
            assertThrows(java.io.IOException.class, () -> status(mock.urls().get(0)));
            long deadline = System.nanoTime() + 2_000_000_000L;
            while (mock.worker(0).isListening() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertFalse(mock.worker(0).isListening());
            assertTrue(MockWorkersTest.failsToConnect(mock.urls().get(0)));
            assertEquals(200, status(mock.urls().get(1)));
        }
    }

    @Test
    void requireApiKey() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.requireApiKey("sekrit")).build())) {
            String url = mock.urls().get(0);
            HttpResponse<String> none = Http.post(url + "/v1/completions", COMPLETION);
            assertEquals(401, none.statusCode());
            assertEquals("AuthenticationError", Http.json(none).get("error").get("type").asText());
            assertEquals(401, Http.post(url + "/v1/completions", COMPLETION, "Authorization", "Bearer nope").statusCode());
            assertEquals(200, Http.post(url + "/v1/completions", COMPLETION, "Authorization", "Bearer sekrit").statusCode());
            assertEquals(401, Http.get(url + "/get_server_info").statusCode());
            assertEquals(200, Http.get(url + "/health").statusCode());
        }
    }

    @Test
    void oversizedBodyIs413() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.maxPayloadBytes(1024)).build())) {
            String big = "{\"prompt\":\"" + "x".repeat(2048) + "\"}";
            assertEquals(413, Http.post(mock.urls().get(0) + "/v1/completions", big).statusCode());
        }
    }

    @Test
    void latencyModelQueuesBeyondMaxConcurrency() throws Exception {
        // 100 uncached prompt tokens at 1 ms each: 100 ms per request, one at a time.
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.prefillUsPerToken(1000).maxConcurrency(1)).build())) {
            String url = mock.urls().get(0) + "/v1/completions";
            String body = "{\"prompt\":[" + "7,".repeat(99) + "7]}";
            long t0 = System.nanoTime();
            CompletableFuture<HttpResponse<String>> a = Http.CLIENT.sendAsync(post(url, body), HttpResponse.BodyHandlers.ofString());
            String other = "{\"prompt\":[" + "8,".repeat(99) + "8]}";
            CompletableFuture<HttpResponse<String>> b = Http.CLIENT.sendAsync(post(url, other), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, a.get().statusCode());
            assertEquals(200, b.get().statusCode());
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= 190, "two 100 ms requests through one slot took " + ms + " ms");

            // The same prompt again is mostly cached: (100-1)/16 = 6 blocks = 96 tokens skip prefill.
            // (Only the simulated delays are asserted, as lower bounds; how fast a loaded machine
            // answers is not.)
            assertEquals(96, Http.json(Http.post(url, body)).get("usage").get("prompt_tokens_details").get("cached_tokens").asInt());
        }
    }

    private static HttpRequest post(String url, String body) {
        return HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    @Test
    void badKnobValuesAreRejectedWithTheirName() {
        Knobs k = new Knobs();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> k.set("status-code", "x"));
        assertTrue(e.getMessage().contains("status-code"));
        assertThrows(IllegalArgumentException.class, () -> k.set("no-such-knob", "1"));
        assertThrows(IllegalArgumentException.class, () -> k.set("random-fail-rate", "2"));
        assertEquals(7, k.set("fail-first-n", "7").failFirstN());
    }
}
