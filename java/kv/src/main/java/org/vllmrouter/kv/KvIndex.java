package org.vllmrouter.kv;

import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which workers hold which prompt prefixes, from their KV events: one tree per
 * {@link CacheIdentity}, claims per source (worker, data-parallel rank) and tier.
 *
 * <pre>{@code
 * KvIndex index = new KvIndex(KvIndex.DEFAULT_BLOCK_BUDGET, new KvMetrics(registry));
 * long[] keys = BlockKeys.of(tokenIds, identity.blockSize(), null);     // once per request
 * PrefixMatch m = index.match(identity, keys, List.of(urlA, urlB));       // any thread, never blocks
 * m.blocksAtOrFaster(0, Tier.HOST) * m.blockSize();                      // tokens urlA need not prefill
 * }</pre>
 *
 * <p>Memory is bounded by a block budget shared by all trees (a block held by several workers
 * counts once). When it is spent, a source that stores a new block gives up its own least
 * recently used claims first, leaves first; if it holds none, the new block is refused. Both are
 * counted ({@code vllm_router_kv_index_evicted_claims_total}, {@code ..._refused_blocks_total}).
 */
public final class KvIndex {

    /**
     * A block costs an entry, plus one engine-hash anchor for each source that holds it
     * (docs/perf/memory.md has the sizes). A GPU holds tens of thousands of blocks, so this fits
     * dozens of workers.
     */
    public static final long DEFAULT_BLOCK_BUDGET = 1_000_000;

    private final IndexBudget budget;
    private final KvMetrics metrics;
    private final ConcurrentHashMap<CacheIdentity, RadixTree> trees = new ConcurrentHashMap<>();

    public KvIndex(long blockBudget, KvMetrics metrics) {
        this.budget = new IndexBudget(blockBudget);
        this.metrics = metrics;
        metrics.watch(this);
    }

    /**
     * The claims of {@code source} under {@code identity}, for its subscriber to change. One
     * handle per source at a time; {@link SourceClaims#close()} releases its claims.
     */
    public SourceClaims claims(CacheIdentity identity, SourceId source) {
        return new SourceClaims(trees.computeIfAbsent(identity, id -> new RadixTree(id, budget)), source, metrics);
    }

    /**
     * For the full blocks of a prompt ({@link BlockKeys#of}), how many leading blocks each of
     * {@code workers} holds, per tier. Lock-free; a worker the index does not know holds none.
     */
    public PrefixMatch match(CacheIdentity identity, long[] blockKeys, List<String> workers) {
        RadixTree tree = trees.get(identity);
        if (tree == null) {
            int[] none = new int[workers.size() * Tier.ALL.length];
            return new PrefixMatch(identity.blockSize(), blockKeys.length, workers, none, none);
        }
        return tree.match(blockKeys, workers);
    }

    /** Blocks held by at least one source, over all identities. */
    public long blocks() {
        return budget.used();
    }

    public long blockBudget() {
        return budget.max();
    }
}
