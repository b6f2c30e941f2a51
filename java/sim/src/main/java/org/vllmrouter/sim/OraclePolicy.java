package org.vllmrouter.sim;

import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.Trajectory;
import org.vllmrouter.mock.rollout.Turn;

/**
 * The simulator's "perfect router", a floor to read the policies against: it knows the whole batch before the first
 * turn, so it plans every trajectory's worker once, longest-processing-time first (the trajectories in decreasing
 * order of their work, each to the worker with the least work planned so far), and keeps each trajectory on its
 * worker for all its turns, so every turn reuses the context its previous turn left. A trajectory's work is what it
 * adds to a batching worker's busy time with its context cached: per turn, the compute of its new prompt tokens, and
 * per output token the compute of one token and the read of its context's KV ({@link CostConstants}).
 *
 * <p>It is not a proven lower bound (placement is static and balances work, not KV blocks; the engine model's
 * batching and preemption are not planned for); it is the best a router could do by knowing lengths and keeping
 * locality, which no live policy can know. Only {@code simulate} offers it.
 */
final class OraclePolicy implements LoadBalancingPolicy {
    static final String NAME = "oracle";

    private final Map<String, Integer> plan;

    OraclePolicy(List<Trajectory> trajectories, int workerCount, CostConstants costs) {
        Integer[] order = new Integer[trajectories.size()];
        double[] work = new double[order.length];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
            work[i] = work(trajectories.get(i), costs);
        }
        Arrays.sort(order, Comparator.comparingDouble((Integer i) -> -work[i]).thenComparingInt(i -> i));
        double[] planned = new double[workerCount];
        plan = new HashMap<>(order.length * 2);
        for (int i : order) {
            int least = 0;
            for (int w = 1; w < workerCount; w++) {
                if (planned[w] < planned[least]) {
                    least = w;
                }
            }
            planned[least] += work[i];
            plan.put(trajectories.get(i).sessionId(), least);
        }
    }

    /** Busy seconds the trajectory adds to a batching worker that keeps its context between turns. */
    static double work(Trajectory t, CostConstants costs) {
        double seconds = 0;
        int context = 0;
        for (Turn turn : t.turns()) {
            int fresh = Math.max(0, turn.promptTokens() - context);
            seconds += fresh * costs.computeSecondsPerToken();
            int out = turn.outputTokens();
            seconds += out * (costs.computeSecondsPerToken()
                    + (turn.promptTokens() + out / 2.0) * costs.kvReadSecondsPerToken());
            context = turn.promptTokens() + out;
        }
        return seconds;
    }

    @Override
    public String name() {
        return NAME;
    }

    /** The planned worker, from the candidates in the simulator's worker order; null for a session not planned. */
    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        Integer w = plan.get(request.sessionId());
        return w == null ? null : candidates.get(w);
    }
}
