package org.vllmrouter.core.policy;

import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.worker.Worker;

/** Uniform choice among the candidates. */
public final class RandomPolicy implements LoadBalancingPolicy {
    @Override
    public String name() {
        return PolicyNames.RANDOM;
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        if (candidates.isEmpty()) {
            return null;
        }
        return candidates.get(ThreadLocalRandom.current().nextInt(candidates.size()));
    }
}
