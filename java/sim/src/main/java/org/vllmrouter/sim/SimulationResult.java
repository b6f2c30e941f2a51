package org.vllmrouter.sim;

import java.util.List;

/**
 * What one policy did with one workload at one pressure. Latencies in virtual seconds: a trajectory runs from its
 * first request to its last answer (or its disconnect), a group from its first trajectory's start to its last
 * trajectory's end. {@code prefixHitRate}: the share of the turns' prompt tokens found cached when each turn was
 * first admitted. {@code turnP50}, {@code turnP90}: a turn's latency, from its request to its last token (or its
 * disconnect), think time excluded. {@code recomputedTokens}: tokens computed again that their trajectory had computed
 * before (evicted, sent to another worker, or lost to a preemption). {@code imbalance}: the busiest worker's step time over the mean.
 * {@code errors}: turns no worker could take (no candidate, or longer than a worker's whole KV cache).
 * {@code groupLatencies}: every group's latency, in no particular order.
 */
public record SimulationResult(String policy, String pressure, int workers, int kvBlocksPerWorker, double makespan,
                               double groupP50, double groupP90, double groupMax, double trajectoryP50,
                               double trajectoryP90, double turnP50, double turnP90, double prefixHitRate,
                               long recomputedTokens, double imbalance, long preemptions, long turns, long errors,
                               List<Double> groupLatencies) {
    public SimulationResult {
        groupLatencies = List.copyOf(groupLatencies);
    }
}
