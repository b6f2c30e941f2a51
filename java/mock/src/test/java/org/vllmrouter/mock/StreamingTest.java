package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** SSE answers: vLLM's chunk shapes, [DONE], and chunks that arrive one by one. */
class StreamingTest {

    private static HttpResponse<Stream<String>> stream(String url, String body) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return Http.CLIENT.send(req, HttpResponse.BodyHandlers.ofLines());
    }

    private static List<String> events(HttpResponse<Stream<String>> res) {
        try (Stream<String> lines = res.body()) {
            return lines.filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).toList();
        }
    }

    @Test
    void chatStreamHasDeltasUsageAndDone() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).all(k -> k.streamChunks(3)).build())) {
            HttpResponse<Stream<String>> res = stream(mock.urls().get(0) + "/v1/chat/completions",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,"
                            + "\"max_tokens\":6,\"stream_options\":{\"include_usage\":true}}");
            assertEquals(200, res.statusCode());
            assertEquals("text/event-stream", res.headers().firstValue("content-type").orElseThrow());
            assertEquals(mock.worker(0).id(), res.headers().firstValue("x-worker-id").orElseThrow());
            List<String> events = events(res);
            assertEquals(5, events.size(), events.toString());
            StringBuilder text = new StringBuilder();
            for (int i = 0; i < 3; i++) {
                JsonNode c = Http.JSON.readTree(events.get(i));
                assertEquals("chat.completion.chunk", c.get("object").asText());
                JsonNode choice = c.get("choices").get(0);
                text.append(choice.get("delta").get("content").asText());
                if (i < 2) {
                    assertTrue(choice.get("finish_reason").isNull());
                } else {
                    assertEquals("stop", choice.get("finish_reason").asText());
                }
            }
            assertEquals("assistant", Http.JSON.readTree(events.get(0)).get("choices").get(0)
                    .get("delta").get("role").asText());
            assertEquals("ok ok ok ok ok ok", text.toString());
            JsonNode usage = Http.JSON.readTree(events.get(3));
            assertEquals(0, usage.get("choices").size());
            assertEquals(6, usage.get("usage").get("completion_tokens").asInt());
            assertEquals("[DONE]", events.get(4));
        }
    }

    @Test
    void completionsAndGenerateStream() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.single())) {
            List<String> events = events(stream(mock.urls().get(0) + "/v1/completions",
                    "{\"prompt\":\"hi\",\"stream\":true,\"max_tokens\":2}"));
            assertEquals(3, events.size());
            assertEquals("text_completion", Http.JSON.readTree(events.get(0)).get("object").asText());
            assertEquals("ok ", Http.JSON.readTree(events.get(0)).get("choices").get(0).get("text").asText());

            List<String> sgl = events(stream(mock.urls().get(0) + "/generate",
                    "{\"text\":\"hi\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":2}}"));
            JsonNode last = Http.JSON.readTree(sgl.get(1));
            assertEquals("ok ok", last.get("text").asText());
            assertEquals("stop", last.get("meta_info").get("finish_reason").get("type").asText());
            assertNull(Http.JSON.readTree(sgl.get(0)).get("meta_info").get("finish_reason").textValue());
        }
    }

    @Test
    void chunksArriveIncrementally() throws Exception {
        long gapMs = 150;
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.slowStreamMs(gapMs).streamChunks(3)).build())) {
            HttpResponse<Stream<String>> res = stream(mock.urls().get(0) + "/v1/completions",
                    "{\"prompt\":\"hi\",\"stream\":true,\"max_tokens\":3}");
            List<Long> arrivals = new ArrayList<>();
            try (Stream<String> lines = res.body()) {
                Iterator<String> it = lines.iterator();
                while (it.hasNext()) {
                    if (it.next().startsWith("data: ")) {
                        arrivals.add(System.nanoTime());
                    }
                }
            }
            assertEquals(4, arrivals.size());
            long firstToLastMs = (arrivals.get(3) - arrivals.get(0)) / 1_000_000;
            assertTrue(firstToLastMs >= 2 * gapMs - 20, "first chunk only " + firstToLastMs + " ms before the end");
            assertEquals(0, mock.worker(0).inFlight());
        }
    }
}
