package org.vllmrouter.core.policy;

import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.worker.Worker;

/**
 * kv_aware: each candidate's cost is the prompt tokens it would have to compute (the input minus the prefix it
 * holds, as the workers' KV events report it, credited by tier) plus its in-flight load: the router's in-flight
 * requests to it times the running mean of the tokens recent requests had to compute on the worker chosen for them
 * (a request ahead in the queue costs about one prefill of what is not cached; counting whole prompts instead would
 * let one queued request outweigh a long cached conversation). Temperature 0 picks the cheapest, the first in registry
 * order on a tie, so idle workers with no hit are chosen the same way every time; above 0 the choice is sampled from a
 * softmax over -cost / (T x that mean), which keeps T's meaning independent of prompt length. Without tokens (the
 * render call failed, or a route that has none) every credit is 0 and the choice is on load alone.
 */
public final class KvAwarePolicy implements LoadBalancingPolicy {
    /** The transfer credit of a block in each slower tier, relative to one on the worker's GPU (1.0). */
    public record Settings(double temperature, double creditHost, double creditExternal, double creditDisk) {
        public static Settings from(RouterConfig cfg) {
            return new Settings(cfg.routerTemperature(), cfg.kvPenaltyHost(), cfg.kvPenaltyExternal(),
                    cfg.kvPenaltyDisk());
        }
    }

    /** Weight of one request in the running mean of computed tokens. */
    private static final double MEAN_WEIGHT = 0.05;

    private final Settings settings;
    /** NaN until a request with tokens has been placed. */
    private volatile double meanComputedTokens = Double.NaN;

    public KvAwarePolicy(Settings settings) {
        this.settings = settings;
    }

    public Settings settings() {
        return settings;
    }

    @Override
    public String name() {
        return PolicyNames.KV_AWARE;
    }

    @Override
    public boolean usesPrefixResidency() {
        return true;
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        int n = candidates.size();
        if (n == 0) {
            return null;
        }
        PrefixResidency prefix = request.prefix();
        int input = prefix.inputTokens();
        double seen = meanComputedTokens;
        double mean = Math.max(1.0, Double.isNaN(seen) ? input : seen);
        double[] cost = new double[n];
        int[] computed = new int[n];
        for (int i = 0; i < n; i++) {
            Worker w = candidates.get(i);
            computed[i] = input - prefix.creditedTokens(w);
            cost[i] = computed[i] + w.load() * mean;
        }
        int chosen = settings.temperature() > 0 ? sample(cost, settings.temperature() * mean) : cheapest(cost);
        if (input > 0) {
            meanComputedTokens = Double.isNaN(seen) ? computed[chosen] : seen + MEAN_WEIGHT * (computed[chosen] - seen);
        }
        Worker worker = candidates.get(chosen);
        prefix.decided(worker, input == 0 ? "missing_tokens" : "prefix_cost");
        return worker;
    }

    private static int cheapest(double[] cost) {
        int best = 0;
        for (int i = 1; i < cost.length; i++) {
            if (cost[i] < cost[best]) {
                best = i;
            }
        }
        return best;
    }

    private static int sample(double[] cost, double scale) {
        double min = cost[cheapest(cost)];
        double[] weight = new double[cost.length];
        double total = 0;
        for (int i = 0; i < cost.length; i++) {
            weight[i] = Math.exp(-(cost[i] - min) / scale);
            total += weight[i];
        }
        double r = ThreadLocalRandom.current().nextDouble(total);
        for (int i = 0; i < cost.length; i++) {
            r -= weight[i];
            if (r < 0) {
                return i;
            }
        }
        return cost.length - 1;
    }
}
