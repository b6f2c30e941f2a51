package org.vllmrouter.server;

import java.util.function.BiConsumer;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.server.metrics.RouterMetrics;
import org.vllmrouter.server.proxy.RetryPolicy;

/**
 * What a {@link ProxyExchange} needs from the router for one request: connection pools, retry settings, metrics,
 * the route label for metrics, and who to tell when an attempt on a worker ends (the policy's completion hook).
 */
record ProxyContext(WorkerPools pools, RetryPolicy retry, RouterMetrics metrics, long requestTimeoutNanos, String route,
                    BiConsumer<Worker, Boolean> workerDone) {

    void onWorkerDone(Worker worker, boolean success) {
        workerDone.accept(worker, success);
    }
}
