package org.vllmrouter.core.policy;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.worker.Worker;

/** {@code candidates[counter++ mod size]} with one shared atomic counter, as upstream. */
public final class RoundRobinPolicy implements LoadBalancingPolicy {
    private final AtomicLong counter = new AtomicLong();

    @Override
    public String name() {
        return PolicyNames.ROUND_ROBIN;
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        if (candidates.isEmpty()) {
            return null;
        }
        long n = counter.getAndIncrement();
        return candidates.get((int) Long.remainderUnsigned(n, candidates.size()));
    }
}
