package org.vllmrouter.mock.rollout;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * One vLLM engine's scheduler and KV cache, stepped by its caller in virtual time (V1's scheduler, simplified).
 *
 * <p>A step spends a token budget: running requests first, in admission order (one token for a decoding request, a
 * chunk of the rest for one still prefilling), then waiting requests in arrival order, each starting from its longest
 * cached prefix and prefilling the remainder in chunks. KV lives in a fixed number of blocks shared by the running
 * requests and the prefix cache: a full block is registered under the hash of everything up to its end, and when no
 * request holds it any more it stays cached until it is the least recently freed block and one is needed. When a
 * running request needs a block and none is free or evictable, the most recently admitted request is preempted: its
 * blocks are freed (still cached) and it waits to be recomputed from whatever is still cached.
 *
 * <p>Use: {@link #submit}, then while {@link #hasWork()}: {@link #startStep()} gives the step's duration, and
 * {@link #finishStep()} applies it and returns the requests it finished.
 */
public final class EngineModel {
    /**
     * One KV block; {@code registered} while the prefix cache can find it by {@code hash}. A cached block no request
     * holds is linked into the eviction queue through {@code older} and {@code newer}.
     */
    static final class Block {
        long hash;
        int refs;
        boolean registered;
        Block older;
        Block newer;
    }

    /** Cached blocks no request holds, least recently freed first: the eviction order. */
    private static final class EvictionQueue {
        private final Block head = new Block();
        private int size;

        EvictionQueue() {
            head.older = head;
            head.newer = head;
        }

        void addNewest(Block b) {
            b.older = head.older;
            b.newer = head;
            head.older.newer = b;
            head.older = b;
            size++;
        }

        void remove(Block b) {
            b.older.newer = b.newer;
            b.newer.older = b.older;
            b.older = null;
            b.newer = null;
            size--;
        }

        Block oldest() {
            return head.newer;
        }

        int size() {
            return size;
        }
    }

    private record Scheduled(EngineRequest request, int tokens) {
    }

    /**
     * What enters and leaves the prefix cache, as vLLM's KV events report it: a block of {@code request} (its index
     * in the request's context) registered, or a block evicted. Called on the stepping thread, inside a step.
     */
    public interface CacheListener {
        CacheListener NONE = new CacheListener() {
            @Override
            public void stored(EngineRequest request, int block) {
            }

            @Override
            public void removed(long hash) {
            }
        };

        void stored(EngineRequest request, int block);

        void removed(long hash);
    }

    private final CostConstants costs;
    private final int capacityBlocks;
    private final CacheListener listener;
    private final ArrayDeque<EngineRequest> waiting = new ArrayDeque<>();
    private final List<EngineRequest> running = new ArrayList<>();
    private final BlockTable cached = new BlockTable();
    private final EvictionQueue evictable = new EvictionQueue();
    private final List<Scheduled> step = new ArrayList<>();
    private int heldBlocks;

    private double busySeconds;
    private long preemptions;
    private long recomputedTokens;
    private long promptTokens;
    private long hitTokens;
    private long steps;

    public EngineModel(CostConstants costs, int capacityBlocks) {
        this(costs, capacityBlocks, CacheListener.NONE);
    }

    public EngineModel(CostConstants costs, int capacityBlocks, CacheListener listener) {
        if (capacityBlocks <= 0) {
            throw new IllegalArgumentException("KV capacity must be > 0 blocks, got " + capacityBlocks);
        }
        this.costs = costs;
        this.capacityBlocks = capacityBlocks;
        this.listener = listener;
    }

    /**
     * Queues {@code request}; false (and nothing queued) when it could not fit even in an empty cache, as vLLM
     * refuses a request longer than its KV capacity.
     */
    public boolean submit(EngineRequest request) {
        if (blocksFor(request.peakTokens()) > capacityBlocks) {
            return false;
        }
        waiting.addLast(request);
        return true;
    }

    /**
     * Drops {@code request} (a client that went away), its blocks freed into the cache as a finished request's are;
     * false when it is neither waiting nor running. Call between steps, never between {@link #startStep()} and
     * {@link #finishStep()}.
     */
    public boolean abort(EngineRequest request) {
        if (waiting.remove(request)) {
            return true;
        }
        if (running.remove(request)) {
            release(request);
            return true;
        }
        return false;
    }

    public boolean hasWork() {
        return !running.isEmpty() || !waiting.isEmpty();
    }

    /** Tokens of a prompt ({@code promptTokens} long, its blocks hashing to {@code hashes}) this engine holds. */
    public int cachedPrefixTokens(long[] hashes, int promptTokens) {
        int limit = Math.min(hashes.length, (promptTokens - 1) / costs.blockSize());
        int n = 0;
        while (n < limit && cached.containsKey(hashes[n])) {
            n++;
        }
        return n * costs.blockSize();
    }

    /** Chooses this step's work and returns how long it takes; call only while {@link #hasWork()}. */
    public double startStep() {
        step.clear();
        int budget = costs.maxBatchedTokens();
        boolean preempted = false;
        for (int i = 0; i < running.size() && budget > 0; i++) {
            EngineRequest r = running.get(i);
            int restore = r.restoreTokens();
            int tokens = r.computed < restore ? Math.min(restore - r.computed, budget) : 1;
            while (!allocate(r, r.computed + tokens)) {
                EngineRequest victim = running.remove(running.size() - 1);
                preempt(victim);
                preempted = true;
                if (victim == r) {
                    tokens = 0;
                    break;
                }
            }
            if (tokens > 0) {
                step.add(new Scheduled(r, tokens));
                budget -= tokens;
            }
        }
        while (!preempted && budget > 0 && running.size() < costs.maxRunning() && !waiting.isEmpty()) {
            int tokens = admit(waiting.peekFirst(), budget);
            if (tokens == 0) {
                break;
            }
            EngineRequest r = waiting.pollFirst();
            running.add(r);
            step.add(new Scheduled(r, tokens));
            budget -= tokens;
        }
        long scheduledTokens = 0;
        long context = 0;
        for (Scheduled s : step) {
            scheduledTokens += s.tokens();
            context += s.request().computed + s.tokens();
        }
        double seconds = costs.stepSeconds(scheduledTokens, context);
        busySeconds += seconds;
        steps++;
        return seconds;
    }

    /** Hands {@code action} each request the step started last computes tokens for, in the step's order. */
    public void forEachScheduled(Consumer<EngineRequest> action) {
        for (Scheduled s : step) {
            action.accept(s.request());
        }
    }

    /** Applies the step started last and returns the requests it finished, their KV freed into the cache. */
    public List<EngineRequest> finishStep() {
        List<EngineRequest> done = new ArrayList<>();
        for (Scheduled s : step) {
            EngineRequest r = s.request();
            int end = r.computed + s.tokens();
            EngineRequest.ComputeHistory h = r.history;
            recomputedTokens += Math.max(0, Math.min(end, h.computedOnce) - r.computed);
            h.computedOnce = Math.max(h.computedOnce, end);
            r.computed = end;
            if (end >= r.promptTokens) {
                r.generated = Math.max(r.generated, end - r.promptTokens + 1);
            }
            register(r);
            if (r.finished()) {
                running.remove(r);
                release(r);
                done.add(r);
            }
        }
        step.clear();
        return done;
    }

    /** The tokens {@code r} prefills in this step if it can be admitted now; 0 when it cannot. */
    private int admit(EngineRequest r, int budget) {
        int restore = r.restoreTokens();
        int limit = Math.min(r.blockHashes.length, (restore - 1) / costs.blockSize());
        int hitBlocks = 0;
        int reclaimed = 0;
        for (; hitBlocks < limit; hitBlocks++) {
            Block block = cached.get(r.blockHashes[hitBlocks]);
            if (block == null) {
                break;
            }
            if (block.refs == 0) {
                reclaimed++;
            }
        }
        int hit = hitBlocks * costs.blockSize();
        int tokens = Math.min(restore - hit, budget);
        int needed = blocksFor(hit + tokens) - hitBlocks;
        if (needed > capacityBlocks - heldBlocks - reclaimed) {
            return 0;
        }
        r.blocks.ensureCapacity(blocksFor(r.peakTokens()));
        for (int b = 0; b < hitBlocks; b++) {
            Block block = cached.get(r.blockHashes[b]);
            hold(block);
            r.blocks.add(block);
        }
        r.registeredBlocks = hitBlocks;
        r.computed = hit;
        r.history.computedOnce = Math.max(r.history.computedOnce, hit);
        if (!r.admittedBefore) {
            r.admittedBefore = true;
            r.hitTokens = hit;
            promptTokens += r.promptTokens;
            hitTokens += hit;
        }
        if (!allocate(r, hit + tokens)) {
            throw new IllegalStateException("admission counted " + needed + " free blocks that were not there");
        }
        return tokens;
    }

    /** Gives {@code r} the blocks to hold {@code tokens} positions; false when there are not enough. */
    private boolean allocate(EngineRequest r, int tokens) {
        int needed = blocksFor(tokens) - r.blocks.size();
        if (needed > capacityBlocks - heldBlocks) {
            return false;
        }
        for (int i = 0; i < needed; i++) {
            if (heldBlocks + evictable.size() == capacityBlocks) {
                evictOldest();
            }
            Block block = new Block();
            block.refs = 1;
            heldBlocks++;
            r.blocks.add(block);
        }
        return true;
    }

    private void evictOldest() {
        Block block = evictable.oldest();
        evictable.remove(block);
        cached.remove(block.hash);
        block.registered = false;
        listener.removed(block.hash);
    }

    private void hold(Block block) {
        if (block.refs++ == 0) {
            evictable.remove(block);
            heldBlocks++;
        }
    }

    /** Registers {@code r}'s blocks that are now full, unless an equal block is cached already. */
    private void register(EngineRequest r) {
        int full = Math.min(r.computed / costs.blockSize(), r.blockHashes.length);
        for (int b = r.registeredBlocks; b < full; b++) {
            Block block = r.blocks.get(b);
            if (!block.registered && !cached.containsKey(r.blockHashes[b])) {
                block.hash = r.blockHashes[b];
                block.registered = true;
                cached.put(block.hash, block);
                listener.stored(r, b);
            }
        }
        r.registeredBlocks = Math.max(r.registeredBlocks, full);
    }

    /** Frees {@code r}'s blocks, last first, so a context's tail is evicted before its shared prefix. */
    private void release(EngineRequest r) {
        for (int b = r.blocks.size() - 1; b >= 0; b--) {
            Block block = r.blocks.get(b);
            if (--block.refs == 0) {
                heldBlocks--;
                if (block.registered) {
                    evictable.addNewest(block);
                }
            }
        }
        r.blocks.clear();
        r.registeredBlocks = 0;
    }

    private void preempt(EngineRequest r) {
        release(r);
        r.computed = 0;
        preemptions++;
        r.preemptions++;
        waiting.addFirst(r);
    }

    private int blocksFor(int tokens) {
        return (tokens + costs.blockSize() - 1) / costs.blockSize();
    }

    public int runningCount() {
        return running.size();
    }

    public int waitingCount() {
        return waiting.size();
    }

    /** Blocks held by running requests (cached blocks no request holds count as free, as in vLLM's usage). */
    public int usedBlocks() {
        return heldBlocks;
    }

    /** Blocks in the prefix cache, held or evictable: what the engine's KV events have reported stored and not removed. */
    public int registeredBlocks() {
        return cached.size();
    }

    public int capacityBlocks() {
        return capacityBlocks;
    }

    /** Seconds spent in steps. */
    public double busySeconds() {
        return busySeconds;
    }

    public long preemptions() {
        return preemptions;
    }

    /** Tokens computed again that their trajectory had computed before (lost to eviction, a move or preemption). */
    public long recomputedTokens() {
        return recomputedTokens;
    }

    /** Prompt tokens of the requests admitted, counted once per request. */
    public long promptTokens() {
        return promptTokens;
    }

    /** Of {@link #promptTokens()}, those found in the prefix cache at first admission. */
    public long hitTokens() {
        return hitTokens;
    }

    public long steps() {
        return steps;
    }
}
