package org.vllmrouter.mock.rollout;

/**
 * What a generated rollout batch looks like: {@code groups} prompts x {@code samples} per group, and the
 * distributions each trajectory draws from. The defaults are assumptions about an agentic RL rollout, not
 * measurements: a shared system prompt of 1,000 tokens, task prompts around 500, a Pareto turn count (tail index
 * {@code turnTailIndex}, capped at {@code maxTurns}: P(turns >= k) = k^-1 gives a mean of H(30), about 4), outputs
 * around 200 tokens a turn, tool results around 150, and tool think times with a sub-second median and a tail of
 * seconds (SkyRL-style agents; the upstream router RFC #285 saw 86% of same-agent follow-ups within 1 s). A
 * trajectory ends at its drawn turn count, or before the first turn whose prompt and output would pass {@code
 * contextWindow} tokens, as an agent stops when its context is full.
 */
public record WorkloadShape(int groups, int samples, int systemTokens, LogNormal taskTokens, int maxTurns,
                            double turnTailIndex, LogNormal outputTokens, LogNormal toolTokens,
                            LogNormal thinkSeconds, double abandonShare, int contextWindow) {
    /** No context window: a trajectory runs its drawn turns, whatever its context grows to. */
    public static final int NO_WINDOW = Integer.MAX_VALUE;
    /** The longest context a {@link #longAgentic} trajectory reaches: its last prompt and output. */
    public static final int LONG_CONTEXT_WINDOW = 98_304;

    public WorkloadShape {
        if (groups <= 0) {
            throw new IllegalArgumentException("groups must be > 0, got " + groups);
        }
        if (samples <= 0) {
            throw new IllegalArgumentException("samples must be > 0, got " + samples);
        }
        if (systemTokens < 0) {
            throw new IllegalArgumentException("system prompt tokens must be >= 0, got " + systemTokens);
        }
        if (maxTurns <= 0) {
            throw new IllegalArgumentException("max turns must be > 0, got " + maxTurns);
        }
        if (!(turnTailIndex > 0)) {
            throw new IllegalArgumentException("turn tail index must be > 0, got " + turnTailIndex);
        }
        if (!(abandonShare >= 0 && abandonShare <= 1)) {
            throw new IllegalArgumentException("abandon share must be between 0 and 1, got " + abandonShare);
        }
        if (contextWindow <= 0) {
            throw new IllegalArgumentException("context window must be > 0, got " + contextWindow);
        }
    }

    /** {@code groups} x {@code samples} with the default distributions and no abandoned trajectory. */
    public static WorkloadShape of(int groups, int samples) {
        return new WorkloadShape(groups, samples, 1000, new LogNormal(500, 0.5, 32, 8192), 30, 1.0,
                new LogNormal(200, 0.8, 1, 4096), new LogNormal(150, 1.0, 1, 8192),
                new LogNormal(0.5, 1.2, 0.01, 60), 0.0, NO_WINDOW);
    }

    /**
     * {@code groups} x {@code samples} at the scale of the real-vLLM tests' tiny model on CPU workers, whose context is
     * 4,096 tokens: a 256-token system prompt, task prompts around 256 (at most 512), at most 6 turns, outputs around 32
     * tokens (at most 64) and tool results around 64 (at most 256), so no context passes 2,688 tokens; the same think
     * times as {@link #of}.
     */
    public static WorkloadShape small(int groups, int samples) {
        return new WorkloadShape(groups, samples, 256, new LogNormal(256, 0.5, 32, 512), 6, 1.0,
                new LogNormal(32, 0.8, 1, 64), new LogNormal(64, 1.0, 1, 256), new LogNormal(0.5, 1.2, 0.01, 60), 0.0,
                NO_WINDOW);
    }

    /**
     * {@code groups} x {@code samples} of long agentic trajectories, as coding (SWE) agents run them: the contexts
     * reach the tens of thousands of tokens where a session's footprint, not its count, decides a worker's KV and a
     * recompute after preemption or a move costs seconds. The scale is taken from trainers' reports, assumed rather
     * than measured: verl #6533 moved sessions holding 50-100k-token contexts, and SkyRL #1791's coding rollouts have
     * group latencies of tens of minutes. A 2,000-token system prompt (the agent's instructions and tool
     * definitions); task prompts around 2,000 tokens (an issue and repository context; at most 16,384); a heavier
     * Pareto turn tail than {@link #of} (tail index 0.8, capped at 50 turns, so most trajectories stop within two
     * turns and the long ones run into the context window first); outputs around 300 tokens a turn (reasoning and a
     * tool call, at most 4,096); tool results around 1,500 tokens with a long tail (file views, test logs; at most
     * 16,384); the same think times as {@link #of}, since the upstream router RFC #285's 1 s figure comes from a
     * coding-agent trace. A trajectory stops before its context would pass 98,304 tokens, the window it runs in: the
     * top of verl's range and under Llama-3.1-8B's 128k, and a quarter of the KV an H100 holds beside the model's
     * weights (about 58 GB at 128 KiB a token), so one worker's cache holds several of the longest contexts and
     * {@link Pressure} need not raise a worker's capacity to fit one.
     */
    public static WorkloadShape longAgentic(int groups, int samples) {
        return new WorkloadShape(groups, samples, 2000, new LogNormal(2000, 0.6, 200, 16384), 50, 0.8,
                new LogNormal(300, 0.8, 1, 4096), new LogNormal(1500, 1.0, 1, 16384),
                new LogNormal(0.5, 1.2, 0.01, 60), 0.0, LONG_CONTEXT_WINDOW);
    }

    public WorkloadShape withAbandonShare(double share) {
        return new WorkloadShape(groups, samples, systemTokens, taskTokens, maxTurns, turnTailIndex, outputTokens,
                toolTokens, thinkSeconds, share, contextWindow);
    }
}
