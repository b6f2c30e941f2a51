package org.vllmrouter.discovery;

import java.util.concurrent.CompletableFuture;
import org.vllmrouter.core.worker.WorkerRole;

/**
 * Where discovered workers go: the router's worker registry, through the same path as {@code /add_worker} and
 * {@code /remove_worker}. Implemented by the server; the discovery sources only ever call these two methods.
 */
public interface WorkerSink {

    /** How an {@link #add} ended. */
    enum Outcome {
        /** Healthy and registered. */
        ADDED,
        /** Did not answer its health check before the start-up timeout; nothing was registered. */
        UNHEALTHY,
        /** A worker with this URL is registered already (a static URL or {@code /add_worker}); left to its owner. */
        ALREADY_REGISTERED
    }

    /**
     * Waits until the worker answers its health check (the start-up wait of {@code /add_worker}), then registers it.
     * Cancelling the returned future stops the wait. The worker is registered exactly when the future completes
     * with {@link Outcome#ADDED}.
     *
     * @param bootstrapPort the prefill worker's bootstrap port, or null
     */
    CompletableFuture<Outcome> add(String url, WorkerRole role, Integer bootstrapPort);

    /** Removes the worker and every DP rank of it; its sticky sessions re-bind on their next request. */
    void remove(String url);
}
