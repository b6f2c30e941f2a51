package org.vllmrouter.mock;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A model of vLLM's automatic prefix caching: the prompt is cut into full blocks of
 * {@code blockSize} tokens, each block is named by a hash chained over all blocks before it
 * (so equal blocks after different prefixes do not collide), and blocks live in an LRU.
 * A request's cached tokens are the leading run of blocks already present.
 *
 * <p>As in vLLM, the last prompt token is always computed, so a fully cached prompt reports
 * at most {@code (len - 1) / blockSize} blocks, and the ends of prompts are evicted before
 * their beginnings. With {@code cpu-cache-blocks}, blocks evicted from the GPU move to a
 * bounded CPU tier (vLLM's CPU offload), from which a later prompt still hits.
 *
 * <p>With KV events on, every change is reported, in order, as one batch per request:
 * {@code BlockStored} for new blocks, then {@code BlockRemoved} for evictions; a clear is
 * {@code AllBlocksCleared}. Thread-safe: workers share event-loop threads.
 */
final class PrefixCache {

    private static final long SEED = 0x9E3779B97F4A7C15L;

    /** A cached block: its parent's hash (null for a prompt's first block) and its tokens (kept for events only). */
    private record Block(Long parent, int[] tokens) {}

    private final Map<Long, Block> gpu = new LinkedHashMap<>(1024, 0.75f, true);
    private final Map<Long, Block> cpu = new LinkedHashMap<>(1024, 0.75f, true);
    private final Consumer<List<KvEvent>> events;
    private final Runnable restart;
    private long promptTokens;
    private long cachedTokens;

    /** Without KV events. */
    PrefixCache() {
        this(null, null);
    }

    /**
     * @param events receives each request's batch of events (null: no events)
     * @param restart called, under this cache's lock, when {@code kv-restart-next} starts a new publisher lifetime
     */
    PrefixCache(Consumer<List<KvEvent>> events, Runnable restart) {
        this.events = events;
        this.restart = restart;
    }

    /**
     * Looks the prompt up, then inserts its blocks (the request's KV is now resident).
     *
     * @return the number of prompt tokens served from cache
     */
    synchronized int lookupAndInsert(int[] tokens, Knobs k) {
        if (k.kvRestartNext()) {
            k.kvRestartNext(false);
            gpu.clear();
            cpu.clear();
            if (restart != null) {
                restart.run();
            }
        }
        int blockSize = k.blockSize();
        int capacity = k.cacheBlocks();
        int fullBlocks = tokens.length == 0 || capacity == 0 ? 0 : (tokens.length - 1) / blockSize;
        List<KvEvent> batch = new ArrayList<>();
        long[] hashes = new long[fullBlocks];
        int hits = 0;
        boolean stillHitting = true;
        int runStart = -1;
        long hash = SEED;
        for (int b = 0; b < fullBlocks; b++) {
            hash = chain(hash, tokens, b * blockSize, blockSize);
            hashes[b] = hash;
            if (gpu.containsKey(hash)) {
                hits += stillHitting ? 1 : 0;
                runStart = storeRun(batch, hashes, runStart, b, tokens, blockSize);
                continue;
            }
            if (stillHitting && cpu.get(hash) != null) {
                hits++;
            } else {
                stillHitting = false;
            }
            Long parent = b == 0 ? null : hashes[b - 1];
            gpu.put(hash, new Block(parent, events == null ? null
                    : Arrays.copyOfRange(tokens, b * blockSize, (b + 1) * blockSize)));
            if (runStart < 0) {
                runStart = b;
            }
        }
        storeRun(batch, hashes, runStart, fullBlocks, tokens, blockSize);
        // Most recent last for the prompt's first block, so the LRU evicts prompt ends first.
        for (int b = fullBlocks - 1; b >= 0; b--) {
            gpu.get(hashes[b]);
        }
        evict(batch, capacity, k.cpuCacheBlocks());
        if (events != null && !batch.isEmpty()) {
            events.accept(batch);
        }
        int cached = hits * blockSize;
        promptTokens += tokens.length;
        cachedTokens += cached;
        return cached;
    }

    /** Reports blocks {@code from..to-1} as one {@code BlockStored}; returns -1 (no run open). */
    private int storeRun(List<KvEvent> batch, long[] hashes, int from, int to, int[] tokens, int blockSize) {
        if (from >= 0 && events != null) {
            batch.add(new KvEvent.Stored(Arrays.copyOfRange(hashes, from, to), from == 0 ? null : hashes[from - 1],
                    Arrays.copyOfRange(tokens, from * blockSize, to * blockSize), blockSize, KvEvent.GPU));
        }
        return -1;
    }

    private void evict(List<KvEvent> batch, int capacity, int cpuCapacity) {
        while (gpu.size() > capacity) {
            Map.Entry<Long, Block> eldest = gpu.entrySet().iterator().next();
            gpu.remove(eldest.getKey());
            batch.add(new KvEvent.Removed(new long[] {eldest.getKey()}, KvEvent.GPU));
            if (cpuCapacity > 0 && cpu.put(eldest.getKey(), eldest.getValue()) == null) {
                Block block = eldest.getValue();
                if (events != null) {
                    batch.add(new KvEvent.Stored(new long[] {eldest.getKey()}, block.parent(), block.tokens(),
                            block.tokens().length, KvEvent.CPU));
                }
            }
        }
        while (cpu.size() > cpuCapacity) {
            Long eldest = cpu.keySet().iterator().next();
            cpu.remove(eldest);
            batch.add(new KvEvent.Removed(new long[] {eldest}, KvEvent.CPU));
        }
    }

    synchronized void clear() {
        gpu.clear();
        cpu.clear();
        if (events != null) {
            events.accept(List.of(new KvEvent.Cleared()));
        }
    }

    /** Blocks resident on the GPU. */
    synchronized int size() {
        return gpu.size();
    }

    /** Blocks in the CPU offload tier. */
    synchronized int cpuSize() {
        return cpu.size();
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
