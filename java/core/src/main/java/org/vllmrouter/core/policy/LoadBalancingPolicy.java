package org.vllmrouter.core.policy;

import java.util.List;
import org.vllmrouter.core.worker.Worker;

/** Chooses a worker for a request among the available candidates (upstream's policy trait). */
public interface LoadBalancingPolicy {
    String name();

    /** The chosen worker, or null when there is none (e.g. no candidates). */
    Worker select(List<Worker> candidates, RoutingRequest request);

    /** Called when a request sent to {@code worker} has completed. */
    default void onComplete(Worker worker, boolean success) {
    }

    /** Releases a sticky session; a no-op for policies that keep none. */
    default void finishSession(String sessionId) {
    }
}
