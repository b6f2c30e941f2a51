package org.vllmrouter.core.policy;

import java.util.List;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.hash.Rendezvous;
import org.vllmrouter.core.worker.Worker;

/** The candidate with the highest {@code fbi_hash("<key>:<url>")}; on equal weights the last one, as upstream. */
public final class RendezvousHashPolicy implements LoadBalancingPolicy {
    @Override
    public String name() {
        return PolicyNames.RENDEZVOUS_HASH;
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        if (candidates.isEmpty()) {
            return null;
        }
        return Rendezvous.highest(candidates, HashKeys.rendezvousKey(request), true);
    }
}
