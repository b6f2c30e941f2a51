package org.vllmrouter.mock.rollout;

import java.util.ArrayList;

/**
 * One turn as an engine sees it: the prompt (the first {@code promptTokens} of a context whose full blocks hash to
 * {@code blockHashes}), the tokens to generate, and the trajectory's {@link ComputeHistory}, which tells which of its
 * tokens were computed before (in an earlier turn, anywhere, or before a preemption). {@code tag} is the caller's.
 */
public final class EngineRequest {
    final long[] blockHashes;
    final int promptTokens;
    final int outputTokens;
    final ComputeHistory history;
    private final Object tag;

    /** Positions whose KV this request holds (cache hits included). */
    int computed;
    int generated;
    boolean admittedBefore;
    int hitTokens;
    int preemptions;
    final ArrayList<EngineModel.Block> blocks = new ArrayList<>();
    int registeredBlocks;

    public EngineRequest(long[] blockHashes, int promptTokens, int outputTokens, ComputeHistory history, Object tag) {
        if (promptTokens <= 0 || outputTokens <= 0) {
            throw new IllegalArgumentException("prompt and output must be > 0 tokens, got " + promptTokens + " and "
                    + outputTokens);
        }
        this.blockHashes = blockHashes;
        this.promptTokens = promptTokens;
        this.outputTokens = outputTokens;
        this.history = history;
        this.tag = tag;
    }

    public Object tag() {
        return tag;
    }

    /** Prompt tokens found in the prefix cache when the request was first admitted. */
    public int hitTokens() {
        return hitTokens;
    }

    /** Times the engine preempted this request (its KV freed, to be recomputed). */
    public int preemptions() {
        return preemptions;
    }

    /** Output tokens generated so far. */
    public int generated() {
        return generated;
    }

    public int outputTokens() {
        return outputTokens;
    }

    /** The hash of block {@code index} of the context (everything up to the block's end). */
    public long blockHash(int index) {
        return blockHashes[index];
    }

    public int promptTokens() {
        return promptTokens;
    }

    /** Positions to hold before decoding (again): the prompt, and after a preemption the tokens generated so far. */
    int restoreTokens() {
        return promptTokens + Math.max(0, generated - 1);
    }

    /** KV slots the request needs at its largest. */
    int peakTokens() {
        return promptTokens + outputTokens - 1;
    }

    boolean finished() {
        return generated >= outputTokens;
    }

    /** How far a trajectory's context has been computed at least once, across its turns and workers. */
    public static final class ComputeHistory {
        int computedOnce;
    }
}
