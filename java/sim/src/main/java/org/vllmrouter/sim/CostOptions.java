package org.vllmrouter.sim;

import java.util.Optional;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.Pressure;
import org.vllmrouter.mock.rollout.Workload;
import picocli.CommandLine.Option;

/**
 * {@code simulate}'s cost model: Llama-3.1-8B on an H100 ({@link CostConstants#LLAMA_8B_H100}) unless given figures
 * measured on other workers (a calibration), and each worker's KV capacity from the pressure unless given in tokens.
 * Each check throws {@link BadInput} with the whole error line.
 */
final class CostOptions {
    @Option(names = "--block-tokens", paramLabel = "N", description = "Tokens in a KV block (default: 16).")
    Integer blockTokens;

    @Option(names = "--prefill-tokens-per-sec", paramLabel = "RATE",
            description = "Tokens a worker computes a second in a step (default: the H100 model's compute term).")
    Double prefillTokensPerSec;

    @Option(names = "--decode-secs-per-token", paramLabel = "SECONDS",
            description = "A step's fixed cost, the time one sequence's decode step takes, replacing the H100 model's"
                    + " overhead and memory terms (default: those terms).")
    Double decodeSecsPerToken;

    @Option(names = "--max-batched-tokens", paramLabel = "N",
            description = "Tokens a worker schedules in one step, its chunked-prefill budget (default: 8192).")
    Integer maxBatchedTokens;

    @Option(names = "--max-running", paramLabel = "N", description = "Sequences a worker runs at once (default: 256).")
    Integer maxRunning;

    @Option(names = "--kv-tokens-per-worker", paramLabel = "N",
            description = "Each worker's KV capacity in tokens, instead of --pressure's share of the working set.")
    Long kvTokensPerWorker;

    CostConstants costs() throws BadInput {
        CostConstants base = CostConstants.LLAMA_8B_H100;
        if (blockTokens != null && (blockTokens <= 0 || blockTokens > 1 << 16)) {
            throw new BadInput("--block-tokens must be between 1 and 65536, got " + blockTokens);
        }
        if (prefillTokensPerSec != null && !(prefillTokensPerSec > 0 && Double.isFinite(prefillTokensPerSec))) {
            throw new BadInput("--prefill-tokens-per-sec must be > 0, got " + prefillTokensPerSec);
        }
        if (decodeSecsPerToken != null && !(decodeSecsPerToken > 0 && decodeSecsPerToken <= 60)) {
            throw new BadInput("--decode-secs-per-token must be > 0 and at most 60, got " + decodeSecsPerToken);
        }
        if (maxBatchedTokens != null && (maxBatchedTokens <= 0 || maxBatchedTokens > 1 << 24)) {
            throw new BadInput("--max-batched-tokens must be between 1 and 16777216, got " + maxBatchedTokens);
        }
        if (maxRunning != null && (maxRunning <= 0 || maxRunning > 1 << 16)) {
            throw new BadInput("--max-running must be between 1 and 65536, got " + maxRunning);
        }
        boolean decode = decodeSecsPerToken != null;
        return new CostConstants(blockTokens == null ? base.blockSize() : blockTokens,
                maxBatchedTokens == null ? base.maxBatchedTokens() : maxBatchedTokens,
                maxRunning == null ? base.maxRunning() : maxRunning, decode ? decodeSecsPerToken : base.stepOverheadSeconds(),
                decode ? 0 : base.weightReadSeconds(), decode ? 0 : base.kvReadSecondsPerToken(),
                prefillTokensPerSec == null ? base.computeSecondsPerToken() : 1 / prefillTokensPerSec);
    }

    /**
     * With {@code --kv-tokens-per-worker}, the one level that gives each worker that many tokens in whole blocks
     * (named {@code kv=N}); BadInput when fewer than one block, or beside {@code --pressure}.
     */
    Optional<Pressure> fixedCapacity(Workload workload, int workers, CostConstants costs, boolean pressureGiven)
            throws BadInput {
        if (kvTokensPerWorker == null) {
            return Optional.empty();
        }
        if (pressureGiven) {
            throw new BadInput("--kv-tokens-per-worker gives the KV capacity; drop --pressure");
        }
        long blocks = kvTokensPerWorker / costs.blockSize();
        if (blocks <= 0 || blocks > Integer.MAX_VALUE) {
            throw new BadInput("--kv-tokens-per-worker must hold between one block (" + costs.blockSize()
                    + " tokens) and 2^31 blocks, got " + kvTokensPerWorker);
        }
        // Half a token under the capacity, so that rounding up to whole blocks lands on `blocks`, not one past it.
        double ratio = workload.workingSetTokens() / ((blocks * costs.blockSize() - 0.5) * workers);
        return Optional.of(new Pressure("kv=" + kvTokensPerWorker, ratio));
    }
}
