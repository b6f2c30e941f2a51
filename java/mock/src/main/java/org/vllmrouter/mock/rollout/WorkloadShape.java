package org.vllmrouter.mock.rollout;

/**
 * What a generated rollout batch looks like: {@code groups} prompts x {@code samples} per group, and the
 * distributions each trajectory draws from. The defaults are assumptions about an agentic RL rollout, not
 * measurements: a shared system prompt of 1,000 tokens, task prompts around 500, a Pareto turn count (tail index
 * {@code turnTailIndex}, capped at {@code maxTurns}: P(turns >= k) = k^-1 gives a mean of H(30), about 4), outputs
 * around 200 tokens a turn, tool results around 150, and tool think times with a sub-second median and a tail of
 * seconds (SkyRL-style agents; the upstream router RFC #285 saw 86% of same-agent follow-ups within 1 s).
 */
public record WorkloadShape(int groups, int samples, int systemTokens, LogNormal taskTokens, int maxTurns,
                            double turnTailIndex, LogNormal outputTokens, LogNormal toolTokens,
                            LogNormal thinkSeconds, double abandonShare) {
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
    }

    /** {@code groups} x {@code samples} with the default distributions and no abandoned trajectory. */
    public static WorkloadShape of(int groups, int samples) {
        return new WorkloadShape(groups, samples, 1000, new LogNormal(500, 0.5, 32, 8192), 30, 1.0,
                new LogNormal(200, 0.8, 1, 4096), new LogNormal(150, 1.0, 1, 8192),
                new LogNormal(0.5, 1.2, 0.01, 60), 0.0);
    }

    /**
     * {@code groups} x {@code samples} at the scale of the real-vLLM tests' tiny model on CPU workers, whose context is
     * 4,096 tokens: a 256-token system prompt, task prompts around 256 (at most 512), at most 6 turns, outputs around 32
     * tokens (at most 64) and tool results around 64 (at most 256), so no context passes 2,688 tokens; the same think
     * times as {@link #of}.
     */
    public static WorkloadShape small(int groups, int samples) {
        return new WorkloadShape(groups, samples, 256, new LogNormal(256, 0.5, 32, 512), 6, 1.0,
                new LogNormal(32, 0.8, 1, 64), new LogNormal(64, 1.0, 1, 256), new LogNormal(0.5, 1.2, 0.01, 60), 0.0);
    }

    public WorkloadShape withAbandonShare(double share) {
        return new WorkloadShape(groups, samples, systemTokens, taskTokens, maxTurns, turnTailIndex, outputTokens,
                toolTokens, thinkSeconds, share);
    }
}
