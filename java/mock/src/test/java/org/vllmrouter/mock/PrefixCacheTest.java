package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The prefix-cache model: a growing conversation hits on the same worker, never on a fresh one. */
class PrefixCacheTest {

    private static ObjectNode chat(ArrayNode messages) {
        ObjectNode body = Http.JSON.createObjectNode();
        body.put("model", "m");
        body.set("messages", messages);
        body.put("max_tokens", 8);
        return body;
    }

    private static JsonNode usage(String url, ObjectNode body) throws Exception {
        return Http.json(Http.post(url + "/v1/chat/completions", body.toString())).get("usage");
    }

    @Test
    void cachedTokensGrowAcrossTurnsOnTheSameWorkerAndAreZeroOnAFreshOne() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
            String sticky = mock.urls().get(0);
            ArrayNode messages = Http.JSON.createArrayNode();
            int previousCached = -1;
            int previousPrompt = 0;
            for (int turn = 0; turn < 4; turn++) {
                messages.addObject().put("role", "user").put("content", "turn " + turn + " " + "lorem ipsum ".repeat(20));
                JsonNode u = usage(sticky, chat(messages));
                int cached = u.get("prompt_tokens_details").get("cached_tokens").asInt();
                int prompt = u.get("prompt_tokens").asInt();
                if (turn == 0) {
                    assertEquals(0, cached);
                } else {
                    assertTrue(cached > previousCached, "turn " + turn + ": " + cached + " <= " + previousCached);
                    // Everything the previous turn sent (minus the last partial block) is cached.
                    assertTrue(cached >= previousPrompt - 16 - 1, cached + " vs previous prompt " + previousPrompt);
                }
                assertTrue(cached < prompt);
                assertEquals(0, cached % 16);
                previousCached = cached;
                previousPrompt = prompt;
                messages.addObject().put("role", "assistant").put("content", "ok ok ok ok ok ok ok ok");
            }
            JsonNode fresh = usage(mock.urls().get(1), chat(messages));
            assertEquals(0, fresh.get("prompt_tokens_details").get("cached_tokens").asInt());
            assertTrue(mock.worker(0).cacheHitRate() > 0.3);

            Http.post(sticky + "/flush_cache", "");
            assertEquals(0, usage(sticky, chat(messages)).get("prompt_tokens_details").get("cached_tokens").asInt());
        }
    }

    @Test
    void repeatedPromptIsCachedUpToItsLastFullBlockBeforeTheFinalToken() {
        PrefixCache cache = new PrefixCache();
        int[] tokens = new int[40];
        assertEquals(0, cache.lookupAndInsert(tokens, blocks(100)));
        assertEquals(32, cache.lookupAndInsert(tokens, blocks(100)));
        int[] exact = new int[32];
        assertEquals(16, cache.lookupAndInsert(exact, blocks(100)), "the last token is always computed");
    }

    @Test
    void lruEvictsOldestBlocksAndDivergingPrefixesDoNotHit() {
        long seed = new SplittableRandom().nextLong();
        SplittableRandom rnd = new SplittableRandom(seed);
        PrefixCache cache = new PrefixCache();
        int[] a = rnd.ints(65, 0, 1000).toArray();
        int[] b = a.clone();
        b[0] = a[0] + 1;
        assertEquals(0, cache.lookupAndInsert(a, blocks(4)));
        assertEquals(0, cache.lookupAndInsert(b, blocks(4)), "seed " + seed + ": chained hashes must differ");
        assertEquals(4, cache.size());
        assertEquals(64, cache.lookupAndInsert(b, blocks(4)), "seed " + seed);
        assertEquals(0, cache.lookupAndInsert(a, blocks(4)), "seed " + seed + ": a was evicted");
    }

    private static Knobs blocks(int capacity) {
        return new Knobs().blockSize(16).cacheBlocks(capacity);
    }
}
