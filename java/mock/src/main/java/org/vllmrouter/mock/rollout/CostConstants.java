package org.vllmrouter.mock.rollout;

/**
 * The numbers behind {@link EngineModel}: one vLLM engine serving Llama-3.1-8B in bf16 on one H100 SXM. None is
 * measured here; calibration against a live run is a later step. Where each comes from:
 *
 * <ul>
 *   <li>{@code blockSize} 16 tokens: vLLM's KV block size on CUDA by default.</li>
 *   <li>{@code maxBatchedTokens} 8192: the scheduler's token budget per step, taken as vLLM V1's default for its
 *       OpenAI server on a large GPU (assumed, not checked against a given release).</li>
 *   <li>{@code maxRunning} 256: vLLM's {@code max_num_seqs} default (newer releases use more on H100: assumed).</li>
 *   <li>{@code stepOverheadSeconds} 1 ms: scheduling, sampling and the host side of a step (assumed).</li>
 *   <li>{@code weightReadSeconds} 4.8 ms: every step reads the weights once, 16.06 GB (8.03 B parameters x 2 bytes)
 *       over the H100 SXM's 3.35 TB/s HBM (NVIDIA's datasheet).</li>
 *   <li>{@code kvReadSecondsPerToken} 39 ns: attention reads each context token's KV once per step, 128 KiB a token
 *       (2 x 32 layers x 8 KV heads x 128 dims x 2 bytes, from the model's config) at the same bandwidth.</li>
 *   <li>{@code computeSecondsPerToken} 32 us: 2 x 8.03 GFLOP per token at half of the H100's 989 dense bf16
 *       TFLOP/s (the 50% utilisation is assumed).</li>
 * </ul>
 *
 * A step costs the overhead plus the larger of its memory time (weights and every scheduled sequence's context) and
 * its compute time (its scheduled tokens): decode is memory-bound and slows as the batch's contexts grow, a long
 * prefill chunk is compute-bound.
 */
public record CostConstants(int blockSize, int maxBatchedTokens, int maxRunning, double stepOverheadSeconds,
                            double weightReadSeconds, double kvReadSecondsPerToken, double computeSecondsPerToken) {
    public static final CostConstants LLAMA_8B_H100 = new CostConstants(16, 8192, 256, 0.001, 16.06e9 / 3.35e12,
            131072 / 3.35e12, 2 * 8.03e9 / (0.5 * 989e12));

    public CostConstants {
        if (blockSize <= 0 || maxBatchedTokens <= 0 || maxRunning <= 0) {
            throw new IllegalArgumentException("block size, token budget and running limit must be > 0");
        }
    }

    /** Seconds for one step that computes {@code tokens} new tokens over {@code contextTokens} of attended context. */
    public double stepSeconds(long tokens, long contextTokens) {
        double memory = weightReadSeconds + contextTokens * kvReadSecondsPerToken;
        double compute = tokens * computeSecondsPerToken;
        return stepOverheadSeconds + Math.max(memory, compute);
    }
}
