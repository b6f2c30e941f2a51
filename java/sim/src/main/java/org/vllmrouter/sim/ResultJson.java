package org.vllmrouter.sim;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** One result as {@code --json} prints it, the same keys for a simulated and a live run. */
final class ResultJson {
    private ResultJson() {
    }

    /** With {@code groupLatencies}, also every group's latency ({@code group_latencies_s}), for a CDF. */
    static void put(SimulationResult r, ObjectNode o, boolean groupLatencies) {
        o.put("policy", r.policy());
        o.put("pressure", r.pressure());
        o.put("workers", r.workers());
        o.put("kv_blocks_per_worker", r.kvBlocksPerWorker());
        o.put("makespan_s", round(r.makespan()));
        ObjectNode group = o.putObject("group_latency_s");
        group.put("p50", round(r.groupP50()));
        group.put("p90", round(r.groupP90()));
        group.put("max", round(r.groupMax()));
        ObjectNode trajectory = o.putObject("trajectory_latency_s");
        trajectory.put("p50", round(r.trajectoryP50()));
        trajectory.put("p90", round(r.trajectoryP90()));
        ObjectNode turn = o.putObject("turn_latency_s");
        turn.put("p50", round(r.turnP50()));
        turn.put("p90", round(r.turnP90()));
        o.put("prefix_hit_rate", Math.round(r.prefixHitRate() * 10000) / 10000.0);
        o.put("recomputed_tokens", r.recomputedTokens());
        o.put("imbalance", Math.round(r.imbalance() * 1000) / 1000.0);
        o.put("preemptions", r.preemptions());
        o.put("turns", r.turns());
        o.put("errors", r.errors());
        if (groupLatencies) {
            ArrayNode all = o.putArray("group_latencies_s");
            for (double s : r.groupLatencies()) {
                all.add(round(s));
            }
        }
    }

    private static double round(double seconds) {
        return Math.round(seconds * 1000) / 1000.0;
    }
}
