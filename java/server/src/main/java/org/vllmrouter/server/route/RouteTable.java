package org.vllmrouter.server.route;

import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.vllmrouter.core.settings.RouterSettings;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.session.SessionIdExtractor;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.discovery.WorkerDiscovery;
import org.vllmrouter.server.http.FrontendHandler;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestHandler;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.http.Responses;
import org.vllmrouter.server.kv.KvPlacement;
import org.vllmrouter.server.metrics.ActivityWindow;
import org.vllmrouter.server.metrics.RouterMetrics;
import org.vllmrouter.server.proxy.Proxy;
import org.vllmrouter.server.proxy.RetryPolicy;
import org.vllmrouter.server.proxy.WorkerCalls;
import org.vllmrouter.server.worker.ControlClient;
import org.vllmrouter.server.worker.WorkerFactory;

/**
 * Every route of the router: its path, its access class and the handler that answers it. The access class decides
 * the guards a request passes before its handler runs (see docs/architecture.md, 'How a request flows'):
 * <ul>
 * <li>{@code INFERENCE}: requests a policy routes to a worker; POST only, behind the admission limiter.</li>
 * <li>{@code ADMIN}: worker and session management; they need the admin API key when one is set.</li>
 * <li>{@code PUBLIC}: health and worker information.</li>
 * <li>{@code PAGE}: the status page's markup, which holds no data; a browser cannot send a bearer token when it
 * opens a page, so no key is asked for. The page's data comes from an admin route.</li>
 * </ul>
 * With validation URLs configured, every request but a page or an admin one under an admin key first has its bearer
 * token validated. The lookup uses the normalised path ({@link RequestPath#routeKey()}), so no spelling of a path can
 * slip past its route; a path no route claims goes to the transparent-proxy fallback, except under the status page's
 * {@code /dashboard/}, which a worker does not serve.
 */
public final class RouteTable implements RequestHandler {
    private enum Access { PUBLIC, INFERENCE, ADMIN, PAGE }

    /** {@code method} null: the handler accepts several methods and answers the others itself. */
    private record Route(String label, Access access, HttpMethod method, RouteHandler handler) {}

    private static final String RESPONSES_ITEM_PREFIX = "/v1/responses/";

    private final Map<String, Route> routes = new HashMap<>();
    private final Route responsesItem;
    private final Route dashboardUnknown;
    private final Route fallback;
    private final Auth auth;
    private final AdmissionLimiter limiter;
    private final Runnable releaseAdmission;
    private final RouterMetrics metrics;

    /** {@code client} makes every one-shot call to a worker: auth validation, PD stages, fan-outs, health waits. */
    public RouteTable(RouterSettings settings, WorkerRegistry workers, PolicyRegistry policies, WorkerFactory factory,
                      Proxy proxy, WorkerCalls calls, RouterMetrics metrics, AdmissionLimiter limiter,
                      ControlClient client, KvPlacement kv) {
        this.auth = new Auth(settings.auth().adminApiKey(), settings.auth().apiKeyValidationUrls(), client);
        if (auth.validationEnabled()) {
            metrics.countAuthVerdictsDropped(auth::evictedVerdicts);
        }
        this.limiter = limiter;
        this.releaseAdmission = limiter::release;
        this.metrics = metrics;
        RetryPolicy retry = RetryPolicy.from(settings.retry());
        RoutingInput input = new RoutingInput(
                new SessionIdExtractor(settings.sessions().idHeaders(), settings.sessions().idBodyFields()));
        PdRoutes pd = settings.pd().enabled()
                ? new PdRoutes(settings.pd(), workers, policies, proxy, calls, metrics, client, input, kv) : null;

        // Inference path -> path on the worker.
        Map<String, String> inference = Map.of(
                "/v1/chat/completions", "/v1/chat/completions",
                "/v1/completions", "/v1/completions",
                "/v1/embeddings", "/v1/embeddings",
                "/v1/responses", "/v1/responses",
                "/v1/rerank", "/v1/rerank",
                "/rerank", "/v1/rerank",
                "/generate", "/generate",
                "/inference/v1/generate", "/inference/v1/generate");
        inference.forEach((path, workerPath) -> inference(path, pd != null && PdRoutes.pipelines(path)
                ? pd.pipeline(path, workerPath)
                : new InferenceRoute(path, workerPath, policies, proxy, retry, input, kv)));

        HealthRoutes health = new HealthRoutes(workers, WorkerDiscovery.discoversWorkers(settings.discovery()));
        add("/health", Access.PUBLIC, HttpMethod.GET, health::health);
        add("/liveness", Access.PUBLIC, HttpMethod.GET, health::liveness);
        add("/readiness", Access.PUBLIC, HttpMethod.GET, health::readiness);
        FirstWorkerRoute firstWorker = new FirstWorkerRoute(workers, proxy);
        for (String path : List.of("/health_generate", "/v1/models", "/get_model_info", "/get_server_info")) {
            add(path, Access.PUBLIC, HttpMethod.GET, firstWorker);
        }

        SessionRoutes sessions = new SessionRoutes(workers, policies);
        add("/finish_session", Access.ADMIN, HttpMethod.POST, sessions::finishSession);
        add("/sessions", Access.ADMIN, HttpMethod.GET, sessions::sessions);
        ControlCalls control = new ControlCalls(settings.workers(), workers, client);
        WorkerRoutes admin = new WorkerRoutes(settings.health(), workers, factory, control);
        add("/add_worker", Access.ADMIN, HttpMethod.POST, admin::addWorker);
        add("/remove_worker", Access.ADMIN, HttpMethod.POST, admin::removeWorker);
        add("/list_workers", Access.ADMIN, HttpMethod.GET, admin::listWorkers);
        add("/flush_cache", Access.ADMIN, HttpMethod.POST, admin::flushCache);
        add("/get_loads", Access.ADMIN, HttpMethod.GET, admin::getLoads);
        EngineControlRoutes engine = new EngineControlRoutes(control,
                Duration.ofSeconds(Math.max(1, settings.server().requestTimeoutSecs())), emptied -> {
                    policies.cacheReset(emptied);
                    if (kv != null) {
                        kv.cacheReset(emptied);
                    }
                });
        engine.postRoutes().forEach((path, handler) -> add(path, Access.ADMIN, HttpMethod.POST, handler));
        add("/get_world_size", Access.ADMIN, HttpMethod.GET, engine::worldSize);
        add("/workers", Access.ADMIN, null, admin::workers);
        add(RequestPath.WORKER_ITEM_ROUTE, Access.ADMIN, null, admin::worker);

        DashboardRoutes dashboard = new DashboardRoutes(settings.dashboard(), workers, policies,
                ActivityWindow.of(metrics, workers::all), metrics::cachedTokenRates);
        add(DashboardRoutes.PAGE, Access.PAGE, HttpMethod.GET, dashboard::page);
        add(DashboardRoutes.STATE, Access.ADMIN, HttpMethod.GET, dashboard::state);
        dashboardUnknown = new Route(DashboardRoutes.PREFIX + "{unknown}", Access.PAGE, null, dashboard::unknown);

        responsesItem = new Route("/v1/responses/{response_id}", Access.PUBLIC, null,
                new ResponsesRoutes(control)::item);
        fallback = new Route(FrontendHandler.UNMATCHED, Access.PUBLIC, null,
                new FallbackRoute(settings.workers(), policies, proxy, retry, pd, input));
    }

    private void add(String path, Access access, HttpMethod method, RouteHandler handler) {
        routes.put(path, new Route(path, access, method, handler));
    }

    private void inference(String path, InferenceHandler handler) {
        add(path, Access.INFERENCE, HttpMethod.POST, (reply, request, p) -> admit(reply, request, p, handler));
    }

    @Override
    public void handle(Reply reply) {
        FullHttpRequest request = reply.request();
        RequestPath path;
        try {
            path = RequestPath.parse(request.uri());
        } catch (RequestPath.InvalidPathException e) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST, e.getMessage());
            return;
        }
        Route route = routeOf(path.routeKey());
        reply.front().setRouteLabel(route.label());
        if (route.access() == Access.ADMIN && !auth.adminOpen()) {
            // The admin key stands in for inbound key validation on admin routes: one Authorization header each.
            if (!auth.isAdmin(request.headers())) {
                FullHttpResponse denied = Responses.jsonError(reply.alloc(), HttpResponseStatus.UNAUTHORIZED,
                        "Missing or invalid admin API key (send 'Authorization: Bearer <admin_api_key>')");
                denied.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
                reply.send(denied);
                return;
            }
            dispatch(reply, request, path, route);
            return;
        }
        if (route.access() == Access.PAGE || !auth.validationEnabled()) {
            dispatch(reply, request, path, route);
            return;
        }
        EventLoop loop = reply.loop();
        auth.validate(loop, request.headers()).whenComplete((ok, error) -> loop.execute(() -> {
            if (Boolean.TRUE.equals(ok)) {
                dispatch(reply, request, path, route);
            } else {
                reply.text(HttpResponseStatus.UNAUTHORIZED, Auth.INVALID_API_KEY);
            }
        }));
    }

    private Route routeOf(String routeKey) {
        Route route = routes.get(routeKey);
        if (route != null) {
            return route;
        }
        if (routeKey.startsWith(DashboardRoutes.PREFIX)) {
            return dashboardUnknown;
        }
        return routeKey.startsWith(RESPONSES_ITEM_PREFIX) ? responsesItem : fallback;
    }

    private static void dispatch(Reply reply, FullHttpRequest request, RequestPath path, Route route) {
        if (route.method() != null && !request.method().equals(route.method())) {
            // As axum answers a known path asked with another method.
            FullHttpResponse response = Responses.empty(HttpResponseStatus.METHOD_NOT_ALLOWED);
            response.headers().set(HttpHeaderNames.ALLOW, route.method().name());
            reply.send(response);
            return;
        }
        route.handler().handle(reply, request, path);
    }

    /** Runs {@code handler} once the limiter admits the request; answers 429 or 408 when it does not. */
    private void admit(Reply reply, FullHttpRequest request, RequestPath path, InferenceHandler handler) {
        limiter.acquire(reply.loop(), new AdmissionLimiter.Ticket() {
            @Override
            public void admitted() {
                if (!reply.clientActive()) {
                    limiter.release();
                    reply.discard();
                    return;
                }
                handler.handle(reply, request, path, releaseAdmission);
            }

            @Override
            public void rejected(int status, long retryAfterSecs) {
                metrics.requestFailed(path.routeKey(), status == 429 ? "rate_limited" : "queue_timeout");
                FullHttpResponse response = status == 429
                        ? Responses.jsonError(reply.alloc(), HttpResponseStatus.TOO_MANY_REQUESTS,
                                "Too many requests: the router is at capacity and its queue is full")
                        : Responses.jsonError(reply.alloc(), HttpResponseStatus.REQUEST_TIMEOUT,
                                "Request timed out waiting in the router's queue");
                if (status == 429) {
                    response.headers().set(HttpHeaderNames.RETRY_AFTER, Long.toString(retryAfterSecs));
                }
                reply.send(response);
            }
        });
    }
}
