package org.vllmrouter.sim;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * One trajectory of one simulated run, as {@code simulate --trajectories FILE} writes it (one JSON object a line).
 * Times are virtual seconds summed over the trajectory's turns: {@code queueWait} from a turn's arrival at its worker
 * to the first step that computes for it, {@code prefill} from there to its first output token (chunks, steps shared
 * with others, and a preemption's recompute before it), {@code decode} from there to its last token. A turn that
 * never ran (the policy had no worker, or the worker refused it) adds nothing but its count in {@code errors}.
 *
 * @param workers the workers it ran on, in order, a worker again only after another
 * @param workerChanges turns sent to a worker other than the previous turn's
 */
record TrajectoryRecord(String policy, String pressure, String sessionId, String group, List<Integer> workers,
                        int turns, long promptTokens, long cachedTokens, double queueWait, double prefill,
                        double decode, int preemptions, int workerChanges, double latency, int errors) {

    void put(ObjectNode o) {
        o.put("policy", policy);
        o.put("pressure", pressure);
        o.put("session_id", sessionId);
        o.put("group", group);
        workers.forEach(o.putArray("workers")::add);
        o.put("turns", turns);
        o.put("prompt_tokens", promptTokens);
        o.put("cached_tokens", cachedTokens);
        o.put("queue_wait_s", round(queueWait));
        o.put("prefill_s", round(prefill));
        o.put("decode_s", round(decode));
        o.put("preemptions", preemptions);
        o.put("worker_changes", workerChanges);
        o.put("latency_s", round(latency));
        o.put("errors", errors);
    }

    private static double round(double seconds) {
        return Math.round(seconds * 1e6) / 1e6;
    }
}
