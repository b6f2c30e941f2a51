package org.vllmrouter.server.proxy;

import io.netty.handler.codec.http.HttpHeaders;
import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRole;

/**
 * One request a route hands to the {@link Proxy}, with the reply holding the client's request: what goes to the
 * worker (the client request's method and body, the path on the worker, the headers), how the worker of each attempt is found, and how the exchange is accounted
 * (the route label of its metrics, retries, the admission token to give back). A route creates it, sets what
 * differs from the defaults (no retry, no admission token, upstream's answer when no worker is available) and
 * hands it over; it belongs to the proxy from then on.
 */
public final class ProxiedRequest {
    /** Upstream's answer when no worker can take an inference request. */
    public static final String NO_AVAILABLE_WORKERS = "No available workers (all circuits open or unhealthy)";
    private static final Runnable NO_ADMISSION = () -> {};

    /** Hears the end of the exchange: the final status and whether it counts as success. */
    @FunctionalInterface
    public interface Completion {
        void completed(int status, boolean success);
    }

    final String route;
    final String target;
    final HttpHeaders headers;
    /** Chooses the worker of each attempt; with {@code routing} null it only hears how the call to {@code worker} ended. */
    LoadBalancingPolicy policy;
    /** What the policy looks at; null when the route named the worker itself. */
    RoutingRequest routing;
    WorkerRole role = WorkerRole.REGULAR;
    /** The worker the route named (null: none is available); used when {@code routing} is null. */
    Worker worker;
    RetryPolicy retry = RetryPolicy.NONE;
    String noWorkerMessage = NO_AVAILABLE_WORKERS;
    Runnable admission = NO_ADMISSION;
    Completion completion;
    /** What the worker call is, for its span: "worker", or the PD stage it serves. */
    String stage = "worker";

    /**
     * @param route   the route label of the request metrics
     * @param target  path and query on the worker
     * @param headers headers to send (hop-by-hop ones already removed); Host, Content-Length and the DP rank are set
     *                per attempt
     */
    public ProxiedRequest(String route, String target, HttpHeaders headers) {
        this.route = route;
        this.target = target;
        this.headers = headers;
    }

    /** Each attempt asks {@code policy} for a worker among the available {@code role} workers of the request's model. */
    public ProxiedRequest balancedBy(LoadBalancingPolicy policy, RoutingRequest routing, WorkerRole role) {
        this.policy = policy;
        this.routing = routing;
        this.role = role;
        return this;
    }

    /**
     * The request goes to {@code worker} (null: there is none, and the client gets the no-worker answer);
     * {@code policy}, when not null, hears how the call ended.
     */
    public ProxiedRequest sentTo(Worker worker, LoadBalancingPolicy policy) {
        this.worker = worker;
        this.policy = policy;
        this.routing = null;
        return this;
    }

    public ProxiedRequest retrying(RetryPolicy retry) {
        this.retry = retry;
        return this;
    }

    /** The 503 answer's text when no worker is available. */
    public ProxiedRequest whenNoWorker(String message) {
        this.noWorkerMessage = message;
        return this;
    }

    /** Gives the admission token back; run once, as soon as the response head is out or the exchange has ended. */
    public ProxiedRequest admission(Runnable release) {
        this.admission = release;
        return this;
    }

    /** Names the worker call in the request's trace (a PD stage); "worker" by default. */
    public ProxiedRequest stage(String stage) {
        this.stage = stage;
        return this;
    }

    /** Hears the end of the exchange, after its request metrics are recorded. */
    public ProxiedRequest onCompletion(Completion completion) {
        this.completion = completion;
        return this;
    }
}
