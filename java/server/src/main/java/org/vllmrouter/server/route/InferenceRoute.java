package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.kv.KvPlacement;
import org.vllmrouter.server.proxy.Hop;
import org.vllmrouter.server.proxy.ProxiedRequest;
import org.vllmrouter.server.proxy.Proxy;
import org.vllmrouter.server.proxy.RetryPolicy;

/**
 * An inference route of a regular router: the policy of the request's model chooses a worker per attempt among the
 * available ones, with retries, and the client's bytes and headers go to the route's path on the worker. A policy
 * that weighs cached prefixes (kv_aware) gets them first: {@link KvPlacement} finds them asynchronously, and the
 * request goes on from the client's event loop when they are known (or known to be unknown).
 */
final class InferenceRoute implements InferenceHandler {
    private final String route;
    private final String workerPath;
    private final PolicyRegistry policies;
    private final Proxy proxy;
    private final RetryPolicy retry;
    private final RoutingInput input;
    private final KvPlacement kv;

    /** {@code kv} null: no configured policy weighs prefixes, and none gets any. */
    InferenceRoute(String route, String workerPath, PolicyRegistry policies, Proxy proxy, RetryPolicy retry,
                   RoutingInput input, KvPlacement kv) {
        this.route = route;
        this.workerPath = workerPath;
        this.policies = policies;
        this.proxy = proxy;
        this.retry = retry;
        this.input = input;
        this.kv = kv;
    }

    @Override
    public void handle(Reply reply, FullHttpRequest request, RequestPath path, Runnable admission) {
        RoutingRequest routing = input.read(reply, request, true);
        if (routing == null) {
            admission.run();
            return;
        }
        String target = path.rawQuery().isEmpty() ? workerPath : workerPath + "?" + path.rawQuery();
        LoadBalancingPolicy policy = policies.policyFor(routing.model());
        HttpHeaders headers = Hop.forwardable(request.headers(), true);
        if (!headers.contains(HttpHeaderNames.CONTENT_TYPE)) {
            // The body was checked to be JSON; workers (FastAPI) need the type to read it.
            headers.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
        }
        ProxiedRequest proxied = new ProxiedRequest(route, target, headers)
                .balancedBy(policy, routing, WorkerRole.REGULAR)
                .retrying(retry)
                .admission(admission);
        if (kv == null || !policy.usesPrefixResidency()) {
            proxy.start(reply, proxied);
            return;
        }
        kv.residency(reply.loop(), route, request, routing.model(), WorkerRole.REGULAR, reply.span())
                .thenAccept(prefix -> {
                    routing.withPrefix(prefix);
                    proxy.start(reply, proxied);
                });
    }
}
