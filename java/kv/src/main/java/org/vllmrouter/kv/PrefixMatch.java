package org.vllmrouter.kv;

import java.util.List;

/**
 * How much of one prompt each worker holds: for every worker of the query and every tier, the
 * number of leading blocks (from the prompt's first block, without a hole) that the worker
 * holds. A worker with several data-parallel ranks counts its deepest rank.
 *
 * <p>Two views: {@link #blocks} counts blocks held in exactly that tier, {@link #blocksAtOrFaster}
 * blocks held in that tier or a faster one, so a prefix that is half on the GPU and half
 * offloaded to host memory is {@code blocksAtOrFaster(w, HOST)} long, of which
 * {@code blocksAtOrFaster(w, DEVICE)} need no copy.
 */
public final class PrefixMatch {

    private static final int TIERS = Tier.ALL.length;

    private final int blockSize;
    private final int queryBlocks;
    private final List<String> workers;
    private final int[] exact;
    private final int[] atOrFaster;

    PrefixMatch(int blockSize, int queryBlocks, List<String> workers, int[] exact, int[] atOrFaster) {
        this.blockSize = blockSize;
        this.queryBlocks = queryBlocks;
        this.workers = workers;
        this.exact = exact;
        this.atOrFaster = atOrFaster;
    }

    /** Tokens per block: a depth of {@code d} blocks is {@code d * blockSize()} tokens. */
    public int blockSize() {
        return blockSize;
    }

    /** Full blocks in the prompt that was looked up. */
    public int queryBlocks() {
        return queryBlocks;
    }

    /** The workers of the query, in the query's order. */
    public List<String> workers() {
        return workers;
    }

    /** Leading blocks that worker {@code index} (in {@link #workers()} order) holds in exactly {@code tier}. */
    public int blocks(int index, Tier tier) {
        return exact[index * TIERS + tier.ordinal()];
    }

    /** Leading blocks that worker {@code index} holds, each in {@code tier} or a faster one. */
    public int blocksAtOrFaster(int index, Tier tier) {
        return atOrFaster[index * TIERS + tier.ordinal()];
    }

    /** {@link #blocks(int, Tier)} by worker name; 0 for a worker that was not queried. */
    public int blocks(String worker, Tier tier) {
        int i = workers.indexOf(worker);
        return i < 0 ? 0 : blocks(i, tier);
    }

    /** {@link #blocksAtOrFaster(int, Tier)} by worker name; 0 for a worker that was not queried. */
    public int blocksAtOrFaster(String worker, Tier tier) {
        int i = workers.indexOf(worker);
        return i < 0 ? 0 : blocksAtOrFaster(i, tier);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("PrefixMatch{blocks=").append(queryBlocks);
        for (int i = 0; i < workers.size(); i++) {
            sb.append(", ").append(workers.get(i)).append('=');
            for (Tier t : Tier.ALL) {
                sb.append(t == Tier.DEVICE ? "" : "/").append(blocks(i, t));
            }
        }
        return sb.append('}').toString();
    }
}
