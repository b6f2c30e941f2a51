package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.msgpack.value.Value;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** Mock workers with {@code engine-model}: answers, usage, metrics and stats come from the cost model. */
class EngineModelModeTest {
    private static MockWorkers mock;
    private static String url;
    private static String plain;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.builder().count(2)
                .all(k -> k.engineModel(true).cacheBlocks(256).timeScale(0.01))
                .worker(1, k -> k.engineModel(false))
                .build());
        url = mock.urls().get(0);
        plain = mock.urls().get(1);
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    private static String completion(String prompt, int maxTokens) {
        return "{\"model\":\"mock\",\"prompt\":\"" + prompt + "\",\"max_tokens\":" + maxTokens + "}";
    }

    /** {@code n} one-token characters that no other test's prompt starts with. */
    private static String prompt(char first, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append((char) (first + i % 64));
        }
        return sb.toString();
    }

    @Test
    void aTurnThatExtendsTheAnswerFindsPromptAndAnswerCached() throws Exception {
        String prompt = prompt('\u4e00', 100);
        JsonNode first = Http.json(Http.post(url + "/v1/completions", completion(prompt, 40),
                "X-Session-ID", "task1_0"));
        assertEquals(100, first.at("/usage/prompt_tokens").asInt());
        assertEquals(0, first.at("/usage/prompt_tokens_details/cached_tokens").asInt());
        assertEquals(40, first.at("/usage/completion_tokens").asInt());
        String answer = first.at("/choices/0/text").asText();
        assertEquals(40, answer.length(), "one token per character");
        JsonNode second = Http.json(Http.post(url + "/v1/completions", completion(prompt + answer + "\u4e01", 8),
                "X-Session-ID", "task1_0"));
        assertEquals(141, second.at("/usage/prompt_tokens").asInt());
        assertEquals(128, second.at("/usage/prompt_tokens_details/cached_tokens").asInt(),
                "the full blocks of prompt and answer, 8 of 16 tokens");
    }

    @Test
    void chatCompletionsAreServedByTheModelToo() throws Exception {
        JsonNode chat = Http.json(Http.post(url + "/v1/chat/completions",
                "{\"model\":\"mock\",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt('\u5000', 50)
                        + "\"}],\"max_tokens\":5}"));
        assertEquals("chat.completion", chat.get("object").asText());
        assertEquals(5, chat.at("/choices/0/message/content").asText().length());
        assertTrue(chat.at("/usage/prompt_tokens").asInt() > 50);
    }

    @Test
    void aPromptLongerThanTheWholeCacheIsRefused() throws Exception {
        HttpResponse<String> r = Http.post(url + "/v1/completions", completion(prompt('\u6000', 5000), 1));
        assertEquals(400, r.statusCode());
        assertTrue(Http.json(r).at("/error/message").asText().contains("KV cache (4096 tokens)"), r.body());
        JsonNode cut = Http.json(Http.post(url + "/v1/completions", completion(prompt('\u6000', 4000), 500)));
        assertEquals(97, cut.at("/usage/completion_tokens").asInt(), "what fits beside the prompt");
    }

    @Test
    void metricsUseVllmNamesAndCountThePrefixCache() throws Exception {
        Http.post(url + "/v1/completions", completion(prompt('\u7000', 64), 2));
        Http.post(url + "/v1/completions", completion(prompt('\u7000', 64), 2));
        String metrics = Http.get(url + "/metrics").body();
        for (String name : new String[] {"vllm:num_requests_running{model_name=\"mock\"} ",
                "vllm:num_requests_waiting{model_name=\"mock\"} ", "vllm:kv_cache_usage_perc{model_name=\"mock\"} ",
                "vllm:prefix_cache_queries_total{model_name=\"mock\"} ",
                "vllm:prefix_cache_hits_total{model_name=\"mock\"} "}) {
            assertTrue(metrics.contains("\n" + name), name + " in\n" + metrics);
        }
        JsonNode stats = Http.json(Http.get(url + "/engine_stats"));
        assertTrue(stats.get("hit_tokens").asLong() >= 48, stats.toString());
        assertTrue(stats.get("steps").asLong() > 0);
        assertEquals(256, stats.get("kv_blocks").asInt());
        assertTrue(stats.get("peak_used_blocks").asInt() >= 4, "a 64-token prompt held 4 blocks: " + stats);
        assertTrue(stats.has("fell_behind") && stats.has("behind_seconds"), stats.toString());
        assertEquals(404, Http.get(plain + "/engine_stats").statusCode());
        assertTrue(Http.get(plain + "/metrics").body().contains("vllm:num_requests_running"));
    }

    @Test
    void aStreamedTurnWhoseClientLeavesIsAbortedInTheModel() throws Exception {
        // At the model's own pace, 4000 tokens take about 20 s: the client leaves long before.
        try (MockWorkers slow = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.engineModel(true).cacheBlocks(256)).build())) {
            String slowUrl = slow.urls().get(0);
            HttpRequest request = HttpRequest.newBuilder(URI.create(slowUrl + "/v1/completions"))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(completion(prompt('\u8000', 32), 4000)
                            .replace("}", ",\"stream\":true}")))
                    .build();
            HttpResponse<Stream<String>> r = Http.CLIENT.send(request, HttpResponse.BodyHandlers.ofLines());
            assertEquals(200, r.statusCode());
            try (Stream<String> lines = r.body()) {
                assertTrue(lines.filter(l -> l.startsWith("data: {")).findFirst().isPresent());
            }
            assertTrue(eventually(() -> Http.json(Http.get(slowUrl + "/engine_stats")).get("aborted").asInt() == 1),
                    "the model dropped the turn once its client left");
            assertEquals(0, Http.json(Http.get(slowUrl + "/engine_stats")).get("running").asInt());
        }
    }

    @Test
    void theModelsCachedBlocksArePublishedAsKvEventsWithTheirRenderedTokens() throws Exception {
        try (MockWorkers kv = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.engineModel(true).cacheBlocks(256).timeScale(0.01).kvEvents(true)).build());
             ZContext ctx = new ZContext()) {
            MockWorker w = kv.worker(0);
            ZMQ.Socket sub = ctx.createSocket(SocketType.SUB);
            sub.setHandshakeIvl(300);
            sub.subscribe(new byte[0]);
            sub.setReceiveTimeOut(200);
            sub.connect(w.kvEvents().endpoint());
            // A slow joiner misses what is sent before its subscription reaches the publisher: probe until one arrives.
            boolean joined = false;
            for (int i = 0; i < 100 && !joined; i++) {
                Http.post(w.url() + "/v1/completions", completion(prompt((char) ('\u9000' + 64 * i), 20), 1));
                joined = KvEventsTest.receive(sub) != null;
            }
            assertTrue(joined, "no KV event reached the subscriber");
            while (KvEventsTest.receive(sub) != null) {
                // Drop what the probes sent.
            }
            String prompt = prompt('\u4e00', 40);
            Http.post(w.url() + "/v1/completions", completion(prompt, 8));
            List<Map<String, Value>> events = KvEventsTest.next(sub).events();
            assertEquals(List.of("BlockStored", "BlockStored"), events.stream().map(KvEventsTest::type).toList(),
                    "40 prompt tokens and 7 computed answer tokens fill 2 blocks of 16");
            assertTrue(events.get(0).get("parent_block_hash").isNilValue());
            assertEquals(KvEventsTest.hashes(events.get(0))[0],
                    events.get(1).get("parent_block_hash").asIntegerValue().toLong());
            int[] tokens = new int[32];
            System.arraycopy(KvEventsTest.tokenIds(events.get(0)), 0, tokens, 0, 16);
            System.arraycopy(KvEventsTest.tokenIds(events.get(1)), 0, tokens, 16, 16);
            assertArrayEquals(Arrays.copyOf(KvEventsTest.rendered(w, prompt), 32), tokens);
        }
    }

    private interface Check {
        boolean holds() throws Exception;
    }

    private static boolean eventually(Check check) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (check.holds()) {
                return true;
            }
            Thread.sleep(20);
        }
        return false;
    }
}
