package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.Set;
import org.vllmrouter.core.settings.WorkerPoolSettings;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.proxy.Hop;
import org.vllmrouter.server.proxy.ProxiedRequest;
import org.vllmrouter.server.proxy.Proxy;
import org.vllmrouter.server.proxy.RetryPolicy;

/**
 * The transparent proxy: a path no route claims goes to a worker chosen by the default policy, with the query
 * string and the body bytes as sent (upstream drops the query; SkyRL's /tokenize, /detokenize and render calls
 * need both). The client's Authorization is replaced by the outbound {@code api_key}, as upstream. Not behind the
 * limiter. A PD router sends it through its pipeline instead.
 */
final class FallbackRoute implements RouteHandler {
    private static final Set<HttpMethod> FORWARDED = Set.of(HttpMethod.GET, HttpMethod.POST, HttpMethod.PUT,
            HttpMethod.DELETE, HttpMethod.PATCH, HttpMethod.HEAD);

    private final String outboundAuthorization;
    private final PolicyRegistry policies;
    private final Proxy proxy;
    private final RetryPolicy retry;
    private final PdRoutes pd;
    private final RoutingInput input;

    /** {@code pd} null: a regular router. */
    FallbackRoute(WorkerPoolSettings pool, PolicyRegistry policies, Proxy proxy, RetryPolicy retry, PdRoutes pd,
                  RoutingInput input) {
        String apiKey = pool.apiKey();
        this.outboundAuthorization = apiKey == null || apiKey.isEmpty() ? null : "Bearer " + apiKey;
        this.policies = policies;
        this.proxy = proxy;
        this.retry = retry;
        this.pd = pd;
        this.input = input;
    }

    @Override
    public void handle(Reply reply, FullHttpRequest request, RequestPath path) {
        HttpMethod method = request.method();
        if (!FORWARDED.contains(method)) {
            reply.text(HttpResponseStatus.METHOD_NOT_ALLOWED, "Method " + method.name() + " not supported");
            return;
        }
        RoutingRequest routing = input.read(reply, request, false);
        if (routing == null) {
            return;
        }
        if (pd != null) {
            pd.fallback(reply, request, path, routing);
            return;
        }
        HttpHeaders headers = Hop.forwardable(request.headers(), false);
        if (outboundAuthorization != null) {
            headers.set(HttpHeaderNames.AUTHORIZATION, outboundAuthorization);
        }
        proxy.start(reply, new ProxiedRequest("fallback", path.rawTarget(), headers)
                .balancedBy(policies.policyFor(null), routing, WorkerRole.REGULAR)
                .retrying(retry)
                .whenNoWorker("No available workers"));
    }
}
