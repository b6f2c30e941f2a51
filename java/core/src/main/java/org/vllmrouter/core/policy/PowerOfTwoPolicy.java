package org.vllmrouter.core.policy;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.worker.Worker;

/**
 * Two distinct random candidates; the one with the lower effective load (last polled load plus the
 * router's in-flight count) wins, the first drawn on a tie.
 */
public final class PowerOfTwoPolicy implements LoadBalancingPolicy {
    private volatile Map<String, Integer> polledLoads = Map.of();

    @Override
    public String name() {
        return PolicyNames.POWER_OF_TWO;
    }

    /** Replaces the loads last polled from the workers (URL -> load). */
    public void updateLoads(Map<String, Integer> loads) {
        polledLoads = Map.copyOf(loads);
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        int n = candidates.size();
        if (n == 0) {
            return null;
        }
        if (n == 1) {
            return candidates.get(0);
        }
        ThreadLocalRandom random = ThreadLocalRandom.current();
        int i = random.nextInt(n);
        int j = random.nextInt(n - 1);
        if (j >= i) {
            j++;
        }
        Worker a = candidates.get(i);
        Worker b = candidates.get(j);
        return effectiveLoad(b) < effectiveLoad(a) ? b : a;
    }

    private int effectiveLoad(Worker w) {
        return polledLoads.getOrDefault(w.url(), 0) + w.load();
    }
}
