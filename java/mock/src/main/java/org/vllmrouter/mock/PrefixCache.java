package org.vllmrouter.mock;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A model of vLLM's automatic prefix caching: the prompt is cut into full blocks of
 * {@code blockSize} tokens, each block is named by a hash chained over all blocks before it
 * (so equal blocks after different prefixes do not collide), and blocks live in an LRU.
 * A request's cached tokens are the leading run of blocks already present.
 *
 * <p>As in vLLM, the last prompt token is always computed, so a fully cached prompt reports
 * at most {@code (len - 1) / blockSize} blocks. Thread-safe: workers share event-loop threads.
 */
final class PrefixCache {

    private final Map<Long, Boolean> blocks = new LinkedHashMap<>(1024, 0.75f, true);
    private long promptTokens;
    private long cachedTokens;

    /**
     * Looks the prompt up, then inserts its blocks (the request's KV is now resident).
     *
     * @return the number of prompt tokens served from cache
     */
    synchronized int lookupAndInsert(int[] tokens, int blockSize, int capacity) {
        int fullBlocks = tokens.length == 0 ? 0 : (tokens.length - 1) / blockSize;
        int hits = 0;
        boolean stillHitting = true;
        long hash = 0x9E3779B97F4A7C15L;
        for (int b = 0; b < fullBlocks && capacity > 0; b++) {
            hash = chain(hash, tokens, b * blockSize, blockSize);
            if (stillHitting && blocks.get(hash) != null) {
                hits++;
            } else {
                stillHitting = false;
                blocks.put(hash, Boolean.TRUE);
            }
        }
        while (blocks.size() > capacity) {
            blocks.remove(blocks.keySet().iterator().next());
        }
        int cached = hits * blockSize;
        promptTokens += tokens.length;
        cachedTokens += cached;
        return cached;
    }

    synchronized void clear() {
        blocks.clear();
    }

    synchronized int size() {
        return blocks.size();
    }

    /** Cached / prompt tokens over every lookup since start (0 before the first). */
    synchronized double hitRate() {
        return promptTokens == 0 ? 0.0 : (double) cachedTokens / promptTokens;
    }

    private static long chain(long parent, int[] tokens, int from, int len) {
        long h = parent;
        for (int i = from; i < from + len; i++) {
            h = mix(h ^ tokens[i]);
        }
        return mix(h + len);
    }

    /** SplitMix64 finaliser: cheap and well distributed, collisions are irrelevant for a mock. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
