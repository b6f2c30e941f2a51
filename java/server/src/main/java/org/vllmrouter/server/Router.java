package org.vllmrouter.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.session.BodySource;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.HeaderLookup;
import org.vllmrouter.core.session.SessionIdExtractor;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.discovery.WorkerDiscovery;

/**
 * Routes one aggregated request: path normalisation, authorization, then the route table of reference section 4.1
 * (inference routes behind the limiter, public and admin routes, the transparent-proxy fallback). Owns nothing
 * per connection; one instance serves every connection.
 */
final class Router {
    /** Route label of requests that matched no route of the router's own (the proxy fallback, bad paths). */
    static final String UNMATCHED = "unmatched";
    static final String NO_AVAILABLE_WORKERS = "No available workers (all circuits open or unhealthy)";

    /** Inference routes: session-aware worker selection, limiter, retries. Value = path on the worker. */
    private static final java.util.Map<String, String> INFERENCE_ROUTES = java.util.Map.of(
            "/v1/chat/completions", "/v1/chat/completions",
            "/v1/completions", "/v1/completions",
            "/v1/embeddings", "/v1/embeddings",
            "/v1/responses", "/v1/responses",
            "/v1/rerank", "/v1/rerank",
            "/rerank", "/v1/rerank",
            "/generate", "/generate",
            "/inference/v1/generate", "/inference/v1/generate");

    /** Proxied to the first registered worker without health filtering, as upstream. */
    private static final Set<String> FIRST_WORKER_GETS = Set.of("/health_generate", "/v1/models", "/get_model_info",
            "/get_server_info");

    private static final Set<String> ADMIN_ROUTES = Set.of("/add_worker", "/remove_worker", "/list_workers",
            "/flush_cache", "/get_loads", "/finish_session", "/sessions", "/workers", RequestPath.WORKER_ITEM_ROUTE);

    /** Bodies up to this size are parsed from an array copy (see {@link #bodySource}). */
    private static final int COPIED_BODY_LIMIT = 256 * 1024;

    private final RouterConfig config;
    private final WorkerRegistry workers;
    private final PolicyRegistry policies;
    private final WorkerPools pools;
    private final RouterMetrics metrics;
    private final AdmissionLimiter limiter;
    private final RetryPolicy retry;
    private final Auth auth;
    private final AdminRoutes admin;
    private final PdRoutes pd;
    private final long requestTimeoutNanos;
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile boolean draining;

    Router(RouterConfig config, WorkerRegistry workers, PolicyRegistry policies, WorkerPools pools, RouterMetrics metrics,
           AdmissionLimiter limiter, AdminRoutes admin, PdRoutes pd) {
        this.config = config;
        this.workers = workers;
        this.policies = policies;
        this.pools = pools;
        this.metrics = metrics;
        this.limiter = limiter;
        this.admin = admin;
        this.pd = pd;
        int attempts = config.disableRetries() ? 1 : Math.max(1, config.retryMaxRetries());
        this.retry = new RetryPolicy(attempts, config.retryInitialBackoffMs(), config.retryMaxBackoffMs(),
                config.retryBackoffMultiplier(), config.retryJitterFactor());
        this.auth = new Auth(config.adminApiKey(), config.apiKeyValidationUrls());
        this.requestTimeoutNanos = java.util.concurrent.TimeUnit.SECONDS.toNanos(Math.max(1, config.requestTimeoutSecs()));
    }

    void requestStarted() {
        inFlight.incrementAndGet();
    }

    void requestEnded() {
        inFlight.decrementAndGet();
    }

    int inFlight() {
        return inFlight.get();
    }

    void recordHttp(String route, String method, int status) {
        metrics.httpRequest(route, method, status);
    }

    void startDraining() {
        draining = true;
    }

    /** Takes ownership of {@code request}. */
    void handle(FrontendHandler front, FullHttpRequest request) {
        if (draining) {
            request.release();
            FullHttpResponse response = Responses.text(front.context().alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
                    "Router is shutting down");
            response.headers().set(HttpHeaderNames.CONNECTION, "close");
            front.respond(response);
            return;
        }
        RequestPath path;
        try {
            path = RequestPath.parse(request.uri());
        } catch (RequestPath.InvalidPathException e) {
            request.release();
            front.respond(Responses.jsonError(front.context().alloc(), HttpResponseStatus.BAD_REQUEST, e.getMessage()));
            return;
        }
        front.setRouteLabel(routeLabel(path.routeKey()));
        boolean adminRoute = ADMIN_ROUTES.contains(path.routeKey());
        if (adminRoute && !auth.adminOpen()) {
            // The admin key stands in for inbound key validation on admin routes: one Authorization header each.
            if (!auth.isAdmin(request.headers())) {
                request.release();
                FullHttpResponse denied = Responses.jsonError(front.context().alloc(), HttpResponseStatus.UNAUTHORIZED,
                        "Missing or invalid admin API key (send 'Authorization: Bearer <admin_api_key>')");
                denied.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
                front.respond(denied);
                return;
            }
            dispatch(front, request, path);
            return;
        }
        if (!auth.validationEnabled()) {
            dispatch(front, request, path);
            return;
        }
        EventLoop loop = front.context().channel().eventLoop();
        auth.validate(loop, request.headers()).whenComplete((ok, error) -> loop.execute(() -> {
            if (Boolean.TRUE.equals(ok)) {
                dispatch(front, request, path);
            } else {
                request.release();
                front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.UNAUTHORIZED, Auth.INVALID_API_KEY));
            }
        }));
    }

    private void dispatch(FrontendHandler front, FullHttpRequest request, RequestPath path) {
        String key = path.routeKey();
        String workerPath = INFERENCE_ROUTES.get(key);
        if (workerPath != null) {
            if (requireMethod(front, request, HttpMethod.POST)) {
                admitInference(front, request, path, key, workerPath);
            }
            return;
        }
        if (key.startsWith("/v1/responses/")) {
            admin.responsesItem(front, request, path);
            return;
        }
        switch (key) {
            case "/health" -> {
                if (requireMethod(front, request, HttpMethod.GET)) {
                    request.release();
                    front.respond(health(front));
                }
            }
            case "/liveness" -> {
                if (requireMethod(front, request, HttpMethod.GET)) {
                    request.release();
                    front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.OK, "OK"));
                }
            }
            case "/readiness" -> {
                if (requireMethod(front, request, HttpMethod.GET)) {
                    request.release();
                    front.respond(readiness(front));
                }
            }
            default -> {
                if (FIRST_WORKER_GETS.contains(key)) {
                    if (requireMethod(front, request, HttpMethod.GET)) {
                        proxyToFirstWorker(front, request, path, key);
                    }
                } else if (ADMIN_ROUTES.contains(key)) {
                    admin.handle(front, request, path);
                } else {
                    fallback(front, request, path);
                }
            }
        }
    }

    private static String routeLabel(String key) {
        if (INFERENCE_ROUTES.containsKey(key) || FIRST_WORKER_GETS.contains(key) || ADMIN_ROUTES.contains(key)
                || key.equals("/health") || key.equals("/liveness") || key.equals("/readiness")) {
            return key;
        }
        return key.startsWith("/v1/responses/") ? "/v1/responses/{response_id}" : UNMATCHED;
    }

    /** Answers 405 (as axum does for a known path) unless the method matches; true when it does. */
    static boolean requireMethod(FrontendHandler front, FullHttpRequest request, HttpMethod expected) {
        if (request.method().equals(expected)) {
            return true;
        }
        request.release();
        FullHttpResponse response = Responses.empty(HttpResponseStatus.METHOD_NOT_ALLOWED);
        response.headers().set(HttpHeaderNames.ALLOW, expected.name());
        front.respond(response);
        return false;
    }

    private FullHttpResponse health(FrontendHandler front) {
        if (workers.size() == 0 && WorkerDiscovery.discoversWorkers(config)) {
            // Inference would answer 503 too: a router that has found no worker yet is not healthy.
            return Responses.text(front.context().alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
                    "No workers discovered yet");
        }
        List<String> unhealthy = workers.all().stream().filter(w -> !w.isHealthy()).map(Worker::url).toList();
        if (unhealthy.isEmpty()) {
            return Responses.text(front.context().alloc(), HttpResponseStatus.OK, "All servers healthy");
        }
        StringBuilder list = new StringBuilder("[");
        for (int i = 0; i < unhealthy.size(); i++) {
            list.append(i == 0 ? "\"" : ", \"").append(unhealthy.get(i)).append('"');
        }
        return Responses.text(front.context().alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
                "Unhealthy servers: " + list.append(']'));
    }

    private FullHttpResponse readiness(FrontendHandler front) {
        List<Worker> all = workers.all();
        long healthy = all.stream().filter(Worker::isHealthy).count();
        if (healthy > 0) {
            return Responses.json(front.context().alloc(), HttpResponseStatus.OK, Json.object(g -> {
                g.writeStringField("status", "ready");
                g.writeNumberField("healthy_workers", healthy);
                g.writeNumberField("total_workers", all.size());
            }));
        }
        return Responses.json(front.context().alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE, Json.object(g -> {
            g.writeStringField("status", "not_ready");
            g.writeStringField("reason", "no healthy workers available");
            g.writeNumberField("total_workers", all.size());
        }));
    }

    private void admitInference(FrontendHandler front, FullHttpRequest request, RequestPath path, String route,
                                String workerPath) {
        EventLoop loop = front.context().channel().eventLoop();
        limiter.acquire(loop, new AdmissionLimiter.Ticket() {
            @Override
            public void admitted() {
                if (!front.isActive()) {
                    limiter.release();
                    request.release();
                    return;
                }
                inference(front, request, path, route, workerPath, limiter::release);
            }

            @Override
            public void rejected(int status, long retryAfterSecs) {
                request.release();
                metrics.requestFailed(route, status == 429 ? "rate_limited" : "queue_timeout");
                FullHttpResponse response = status == 429
                        ? Responses.jsonError(front.context().alloc(), HttpResponseStatus.TOO_MANY_REQUESTS,
                                "Too many requests: the router is at capacity and its queue is full")
                        : Responses.jsonError(front.context().alloc(), HttpResponseStatus.REQUEST_TIMEOUT,
                                "Request timed out waiting in the router's queue");
                if (status == 429) {
                    response.headers().set(HttpHeaderNames.RETRY_AFTER, Long.toString(retryAfterSecs));
                }
                front.respond(response);
            }
        });
    }

    private void inference(FrontendHandler front, FullHttpRequest request, RequestPath path, String route,
                           String workerPath, Runnable admissionRelease) {
        RoutingInput input = routingInput(front, request, true);
        if (input == null) {
            admissionRelease.run();
            return;
        }
        if (pd != null && pd.handles(route)) {
            pd.handle(front, request, path, route, workerPath, input, admissionRelease);
            return;
        }
        String target = path.rawQuery().isEmpty() ? workerPath : workerPath + "?" + path.rawQuery();
        LoadBalancingPolicy policy = policies.policyFor(input.extraction().model());
        HttpHeaders headers = Hop.forwardable(request.headers(), true);
        if (!headers.contains(HttpHeaderNames.CONTENT_TYPE)) {
            // The body was checked to be JSON; workers (FastAPI) need the type to read it.
            headers.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
        }
        proxy(front, request, route, target, headers,
                selector(policy, input, WorkerRole.REGULAR), NO_AVAILABLE_WORKERS, admissionRelease, policy, retry);
    }

    /** The session id and model of a request, or null after answering 400 for a bad body or session id. */
    RoutingInput routingInput(FrontendHandler front, FullHttpRequest request, boolean jsonRequired) {
        HttpHeaders headers = request.headers();
        List<String> ids = headers.getAll("x-session-id");
        if (ids.size() > 1 && ids.stream().distinct().count() > 1) {
            reject(front, request, "Conflicting X-Session-ID headers: a request must carry one session id");
            return null;
        }
        HeaderLookup lookup = headers::get;
        ByteBuf body = request.content();
        boolean json = jsonRequired || looksLikeJson(headers);
        BodySource source = json ? bodySource(body) : BodySource.EMPTY;
        if (jsonRequired || (json && body.isReadable())) {
            String problem = JsonBodyCheck.problem(source, jsonRequired);
            if (problem != null) {
                reject(front, request, problem);
                return null;
            }
        }
        Extraction extraction = SessionIdExtractor.extract(lookup, body.isReadable() ? source : BodySource.EMPTY);
        if (extraction.invalidReason() != null) {
            reject(front, request, extraction.invalidReason());
            return null;
        }
        Supplier<String> text = () -> body.toString(StandardCharsets.UTF_8);
        return new RoutingInput(extraction, RoutingRequest.of(extraction, lookup, text));
    }

    record RoutingInput(Extraction extraction, RoutingRequest request) {}

    private static boolean looksLikeJson(HttpHeaders headers) {
        String type = headers.get(HttpHeaderNames.CONTENT_TYPE);
        return type == null || type.toLowerCase(java.util.Locale.ROOT).contains("json");
    }

    /**
     * The aggregated body for the streaming parser. A body in direct or composite buffers (what the aggregator
     * builds) is copied once into an array when it is small: Jackson's array parser is much cheaper than its
     * stream parser, and the copy serves every pass over the body. Large bodies are streamed instead.
     */
    static BodySource bodySource(ByteBuf body) {
        if (body.hasArray()) {
            return BodySource.of(body.array(), body.arrayOffset() + body.readerIndex(), body.readableBytes());
        }
        if (body.readableBytes() <= COPIED_BODY_LIMIT) {
            byte[] copy = ByteBufUtil.getBytes(body);
            return BodySource.of(copy, 0, copy.length);
        }
        return factory -> factory.createParser((InputStream) new ByteBufInputStream(body.duplicate()));
    }

    private static void reject(FrontendHandler front, FullHttpRequest request, String message) {
        request.release();
        front.respond(Responses.jsonError(front.context().alloc(), HttpResponseStatus.BAD_REQUEST, message));
    }

    ProxyExchange.Selector selector(LoadBalancingPolicy policy, RoutingInput input, WorkerRole role) {
        String model = input.extraction().model();
        return unreachable -> {
            List<Worker> candidates = workers.candidates(model, role);
            if (candidates.isEmpty()) {
                return null;
            }
            if (!unreachable.isEmpty()) {
                List<Worker> reachable = candidates.stream().filter(w -> !unreachable.contains(w)).toList();
                candidates = reachable.isEmpty() ? candidates : reachable;
            }
            Worker chosen = policy.select(candidates, input.request());
            if (chosen != null) {
                chosen.incrementProcessed();
                metrics.selected(policy.name(), chosen.url());
            }
            return chosen;
        };
    }

    void proxy(FrontendHandler front, FullHttpRequest request, String route, String target, HttpHeaders headers,
               ProxyExchange.Selector selector, String noWorkerMessage, Runnable admissionRelease,
               LoadBalancingPolicy policy, RetryPolicy retryPolicy) {
        proxy(front, request, route, target, headers, selector, noWorkerMessage, admissionRelease, policy, retryPolicy,
                (status, success, worker) -> {});
    }

    /**
     * Proxies {@code request}'s body to the worker chosen per attempt; takes ownership of {@code request}.
     * {@code alsoOnCompletion} hears the end of the exchange after the route metrics are recorded.
     */
    void proxy(FrontendHandler front, FullHttpRequest request, String route, String target, HttpHeaders headers,
               ProxyExchange.Selector selector, String noWorkerMessage, Runnable admissionRelease,
               LoadBalancingPolicy policy, RetryPolicy retryPolicy, ProxyExchange.Completion alsoOnCompletion) {
        ByteBuf body = request.content().retain();
        HttpMethod method = request.method();
        request.release();
        long startNanos = System.nanoTime();
        ProxyContext context = new ProxyContext(pools, retryPolicy, metrics, requestTimeoutNanos, route,
                (worker, success) -> {
                    if (policy != null) {
                        policy.onComplete(worker, success);
                    }
                });
        new ProxyExchange(context, front, method, target, headers, body, selector, noWorkerMessage, admissionRelease,
                (status, success, worker) -> {
                    if (success && status < 400) {
                        metrics.requestSucceeded(route, (System.nanoTime() - startNanos) / 1e9);
                    } else if (status == 499) {
                        metrics.requestFailed(route, "client_disconnected");
                    } else {
                        metrics.requestFailed(route, status >= 500 ? "http_" + status : "non_retryable_error");
                    }
                    alsoOnCompletion.completed(status, success, worker);
                }).start();
    }

    private void proxyToFirstWorker(FrontendHandler front, FullHttpRequest request, RequestPath path, String route) {
        HttpHeaders headers = Hop.forwardable(request.headers(), true);
        proxy(front, request, route, path.rawTarget(), headers,
                unreachable -> workers.all().stream().findFirst().orElse(null),
                "No workers are available", () -> {}, null, RetryPolicy.NONE);
    }

    /**
     * Transparent proxy: any other path goes to a worker chosen by the default policy, with the query string and the
     * body bytes as sent (upstream drops the query; SkyRL's /tokenize, /detokenize and render calls need both).
     * Client Authorization is replaced by the outbound {@code api_key}, as upstream.
     */
    private void fallback(FrontendHandler front, FullHttpRequest request, RequestPath path) {
        HttpMethod method = request.method();
        if (!(method.equals(HttpMethod.GET) || method.equals(HttpMethod.POST) || method.equals(HttpMethod.PUT)
                || method.equals(HttpMethod.DELETE) || method.equals(HttpMethod.PATCH) || method.equals(HttpMethod.HEAD))) {
            request.release();
            front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.METHOD_NOT_ALLOWED,
                    "Method " + method.name() + " not supported"));
            return;
        }
        RoutingInput input = routingInput(front, request, false);
        if (input == null) {
            return;
        }
        if (pd != null) {
            pd.fallback(front, request, path, input);
            return;
        }
        HttpHeaders headers = Hop.forwardable(request.headers(), false);
        if (config.apiKey() != null && !config.apiKey().isEmpty()) {
            headers.set(HttpHeaderNames.AUTHORIZATION, "Bearer " + config.apiKey());
        }
        LoadBalancingPolicy policy = policies.policyFor(null);
        proxy(front, request, "fallback", path.rawTarget(), headers, selector(policy, input, WorkerRole.REGULAR),
                "No available workers", () -> {}, policy, retry);
    }
}
