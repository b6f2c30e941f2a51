package org.vllmrouter.server.proxy;

import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.server.metrics.RouterMetrics;

/**
 * The one place a call to a worker is accounted, whichever route made it: a policy's choice counts toward the
 * worker's processed total and the decision metric; the call holds the worker's load until it ends; each answer
 * (or failure to get one) is one outcome for the worker's circuit breaker and its metric; the end of the call tells
 * the policy. One success rule for all of it, upstream's: the worker answered 2xx or 4xx.
 */
public final class WorkerCalls {
    private final RouterMetrics metrics;

    public WorkerCalls(RouterMetrics metrics) {
        this.metrics = metrics;
    }

    /** 2xx and 4xx are the worker doing its job (a 4xx is the client's fault); anything else is a failure. */
    public static boolean success(int status) {
        return (status >= 200 && status < 300) || (status >= 400 && status < 500);
    }

    /** {@code policy} chose {@code worker} for a request. */
    public void selected(LoadBalancingPolicy policy, Worker worker) {
        worker.incrementProcessed();
        metrics.selected(policy.name(), worker.shownUrl());
    }

    /** A call to {@code worker} starts; it counts in the worker's load until {@link #ended}. */
    public void started(Worker worker) {
        worker.incrementLoad();
    }

    /** The worker answered with {@code status}: one circuit-breaker outcome. Returns whether it is a success. */
    public boolean answered(Worker worker, int status) {
        boolean success = success(status);
        outcome(worker, success);
        return success;
    }

    /** The call got no answer (the connection failed or closed, or no reply came in time): a failed outcome. */
    public void unanswered(Worker worker) {
        outcome(worker, false);
    }

    /** The call is over: the worker's load drops and {@code policy} (when there is one) hears how it went. */
    public void ended(Worker worker, LoadBalancingPolicy policy, boolean success) {
        worker.decrementLoad();
        if (policy != null) {
            policy.onComplete(worker, success);
        }
    }

    private void outcome(Worker worker, boolean success) {
        worker.circuitBreaker().recordOutcome(success);
        metrics.circuitOutcome(worker.shownUrl(), success);
    }
}
