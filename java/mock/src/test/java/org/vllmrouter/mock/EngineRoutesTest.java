package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** vLLM's pause modes and weight version, as the mock's engine-control routes implement them. */
class EngineRoutesTest {

    private static CompletableFuture<HttpResponse<String>> completion(String url) {
        return Http.CLIENT.sendAsync(HttpRequest.newBuilder(URI.create(url + "/v1/completions"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"hi\",\"max_tokens\":2}")).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void awaitInFlight(MockWorker w, CompletableFuture<?> request) throws Exception {
        while (w.captured("/v1/completions").isEmpty()) {
            Thread.sleep(5);
        }
        assertFalse(request.isDone());
    }

    @Test
    void keepHoldsInFlightAndNewRequestsUntilResumeAndTheyCarryTheNewWeights() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).all(k -> k.latencyMs(300)).build())) {
            MockWorker w = mock.worker(0);
            CompletableFuture<HttpResponse<String>> inFlight = completion(w.url());
            awaitInFlight(w, inFlight);
            assertEquals(200, Http.post(w.url() + "/pause?mode=keep", "").statusCode());
            assertTrue(Http.json(Http.get(w.url() + "/is_paused")).get("is_paused").asBoolean());
            CompletableFuture<HttpResponse<String>> arriving = completion(w.url());
            HttpResponse<String> update = Http.post(w.url() + "/update_weights", "{\"weight_version\":5}");
            assertEquals(5, Http.json(update).get("weight_version").asLong());
            Thread.sleep(400);
            assertFalse(inFlight.isDone(), "a kept request is not answered while paused");
            assertFalse(arriving.isDone(), "a new request is not started while paused");
            assertEquals(200, Http.post(w.url() + "/resume", "").statusCode());
            for (CompletableFuture<HttpResponse<String>> r : java.util.List.of(inFlight, arriving)) {
                HttpResponse<String> answer = r.get(10, TimeUnit.SECONDS);
                assertEquals(200, answer.statusCode());
                assertEquals(5, Http.json(answer).get("weight_version").asLong());
                assertFalse("abort".equals(Http.json(answer).get("choices").get(0).get("finish_reason").asText()));
            }
        }
    }

    @Test
    void abortEndsInFlightRequestsAtOnce() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).all(k -> k.latencyMs(60_000)).build())) {
            MockWorker w = mock.worker(0);
            CompletableFuture<HttpResponse<String>> inFlight = completion(w.url());
            awaitInFlight(w, inFlight);
            assertEquals(200, Http.post(w.url() + "/pause?mode=abort", "").statusCode());
            HttpResponse<String> answer = inFlight.get(10, TimeUnit.SECONDS);
            assertEquals(200, answer.statusCode());
            assertEquals("abort", Http.json(answer).get("choices").get(0).get("finish_reason").asText());
            Http.post(w.url() + "/resume", "");
        }
    }

    @Test
    void waitLetsInFlightRequestsFinishBeforeThePauseTakesHold() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).all(k -> k.latencyMs(500)).build())) {
            MockWorker w = mock.worker(0);
            CompletableFuture<HttpResponse<String>> inFlight = completion(w.url());
            awaitInFlight(w, inFlight);
            HttpResponse<String> paused = Http.post(w.url() + "/pause?mode=wait", "");
            assertEquals(200, paused.statusCode());
            HttpResponse<String> drained = inFlight.get(10, TimeUnit.SECONDS);
            assertEquals("stop", Http.json(drained).get("choices").get(0).get("finish_reason").asText(),
                    "a drained request runs to its end");
            assertTrue(Http.json(Http.get(w.url() + "/is_paused")).get("is_paused").asBoolean());
            Http.post(w.url() + "/resume", "");
        }
    }

    @Test
    void badControlInputIs400() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.single())) {
            String url = mock.urls().get(0);
            assertEquals(400, Http.post(url + "/pause?mode=freeze", "").statusCode());
            assertEquals(400, Http.post(url + "/collective_rpc", "not json").statusCode());
            assertEquals(400, Http.post(url + "/update_weights", "").statusCode());
            assertEquals(1, Http.json(Http.get(url + "/get_world_size")).get("world_size").asInt());
        }
    }
}
