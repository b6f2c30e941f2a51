package org.vllmrouter.server;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.session.BodySource;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.SessionIdExtractor;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;

/**
 * Admin routes (worker management, cache flush, loads, sessions) and the responses sub-routes, with upstream's
 * status codes and bodies. Calls to workers go through {@link ControlClient} (with the outbound
 * {@code api_key} when one is set); replies are written on the client's event loop.
 */
final class AdminRoutes {
    private static final Duration FAN_OUT_TIMEOUT = Duration.ofSeconds(30);

    private final RouterConfig config;
    private final WorkerRegistry workers;
    private final PolicyRegistry policies;
    private final WorkerFactory factory;
    private final HttpHeaders outbound;

    AdminRoutes(RouterConfig config, WorkerRegistry workers, PolicyRegistry policies, WorkerFactory factory) {
        this.config = config;
        this.workers = workers;
        this.policies = policies;
        this.factory = factory;
        this.outbound = new DefaultHttpHeaders();
        if (config.apiKey() != null && !config.apiKey().isEmpty()) {
            outbound.set(HttpHeaderNames.AUTHORIZATION, "Bearer " + config.apiKey());
        }
    }

    void handle(FrontendHandler front, FullHttpRequest request, RequestPath path) {
        String key = path.routeKey();
        String url;
        try {
            url = path.param("url");
        } catch (RequestPath.InvalidPathException e) {
            request.release();
            front.respond(text(front, HttpResponseStatus.BAD_REQUEST, e.getMessage()));
            return;
        }
        switch (key) {
            case "/finish_session" -> {
                if (Router.requireMethod(front, request, HttpMethod.POST)) {
                    request.release();
                    front.respond(finishSession(front, path));
                }
            }
            case "/sessions" -> {
                if (Router.requireMethod(front, request, HttpMethod.GET)) {
                    request.release();
                    front.respond(json(front, HttpResponseStatus.OK, sessionsJson()));
                }
            }
            case "/list_workers" -> {
                if (Router.requireMethod(front, request, HttpMethod.GET)) {
                    request.release();
                    front.respond(json(front, HttpResponseStatus.OK, Json.object(g -> {
                        g.writeArrayFieldStart("urls");
                        for (Worker w : workers.all()) {
                            g.writeString(w.url());
                        }
                        g.writeEndArray();
                    })));
                }
            }
            case "/add_worker" -> {
                if (Router.requireMethod(front, request, HttpMethod.POST)) {
                    request.release();
                    if (url == null || url.isEmpty()) {
                        front.respond(text(front, HttpResponseStatus.BAD_REQUEST, "Missing required query parameter 'url'"));
                        return;
                    }
                    onLoop(front, addWorker(front.context().channel().eventLoop(), url), error -> error == null
                            ? text(front, HttpResponseStatus.OK, "Successfully added worker: " + url)
                            : text(front, HttpResponseStatus.BAD_REQUEST, error));
                }
            }
            case "/remove_worker" -> {
                if (Router.requireMethod(front, request, HttpMethod.POST)) {
                    request.release();
                    if (url == null || url.isEmpty()) {
                        front.respond(text(front, HttpResponseStatus.BAD_REQUEST, "Missing required query parameter 'url'"));
                        return;
                    }
                    workers.removeByBaseUrl(url);
                    front.respond(text(front, HttpResponseStatus.OK, "Successfully removed worker: " + url));
                }
            }
            case "/flush_cache" -> {
                if (Router.requireMethod(front, request, HttpMethod.POST)) {
                    request.release();
                    flushCache(front);
                }
            }
            case "/get_loads" -> {
                if (Router.requireMethod(front, request, HttpMethod.GET)) {
                    request.release();
                    getLoads(front);
                }
            }
            case "/workers" -> workersCollection(front, request);
            default -> workerItem(front, request, path.path().substring(RequestPath.WORKERS_PREFIX.length()));
        }
    }

    private FullHttpResponse finishSession(FrontendHandler front, RequestPath path) {
        String id;
        try {
            id = path.param("session_id");
        } catch (RequestPath.InvalidPathException e) {
            return jsonError(front, e.getMessage());
        }
        if (id == null || id.isEmpty()) {
            return jsonError(front, "Missing required query parameter 'session_id'");
        }
        // The engine's own rule for ids decides what is acceptable, exactly as for routed requests.
        Extraction check = SessionIdExtractor.extract(name -> "x-session-id".equals(name) ? id : null, BodySource.EMPTY);
        if (check.invalidReason() != null) {
            return jsonError(front, check.invalidReason());
        }
        policies.finishSession(id);
        return json(front, HttpResponseStatus.OK, Json.object(g -> {
            g.writeStringField("status", "ok");
            g.writeStringField("session_id", id);
        }));
    }

    String sessionsJson() {
        SessionStats stats = policies.sessionStats();
        Map<String, Integer> byWorker = new TreeMap<>();
        for (Worker w : workers.all()) {
            byWorker.put(w.url(), 0);
        }
        byWorker.putAll(stats.activeByWorker());
        return Json.object(g -> {
            g.writeNumberField("active_sessions", stats.activeSessions());
            g.writeObjectFieldStart("active_by_worker");
            for (Map.Entry<String, Integer> e : byWorker.entrySet()) {
                g.writeNumberField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
            g.writeNumberField("started", stats.started());
            g.writeNumberField("released", stats.released());
            g.writeNumberField("expired", stats.expired());
            g.writeNumberField("rebound", stats.rebound());
            g.writeStringField("session_store", policies.sessionStore().description());
            g.writeBooleanField("degraded", policies.sessionStore().degraded());
        });
    }

    /** Waits for the worker's /health like upstream's add_worker, then registers it; completes with an error or null. */
    CompletableFuture<String> addWorker(EventLoop loop, String url) {
        if (!url.startsWith("http://") && !url.startsWith("https://")) {
            return CompletableFuture.completedFuture("URL must start with http://, https://, or grpc://");
        }
        List<Worker> created;
        try {
            created = factory.create(url, WorkerRole.REGULAR, null);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.completedFuture("Invalid worker URL: " + e.getMessage());
        }
        if (workers.get(created.get(0).url()).isPresent()) {
            return CompletableFuture.completedFuture("Worker " + url + " already exists");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(config.workerStartupTimeoutSecs());
        return StartupWait.untilHealthy(loop, List.of(url), config.healthCheckEndpoint(),
                        Math.max(1, config.workerStartupCheckInterval()), deadline)
                .thenApply(healthy -> {
                    if (!healthy) {
                        return "Timeout " + config.workerStartupTimeoutSecs() + "s waiting for worker " + url
                                + " to become healthy";
                    }
                    boolean added = false;
                    for (Worker w : created) {
                        added |= workers.add(w);
                    }
                    return added ? null : "Worker " + url + " already exists";
                });
    }

    private void workersCollection(FrontendHandler front, FullHttpRequest request) {
        if (request.method().equals(HttpMethod.GET)) {
            request.release();
            front.respond(json(front, HttpResponseStatus.OK, workersJson()));
        } else if (request.method().equals(HttpMethod.POST)) {
            String url = urlField(request);
            request.release();
            if (url == null) {
                front.respond(json(front, HttpResponseStatus.BAD_REQUEST, codedError(
                        "Invalid request body: expected a JSON object with a string field 'url'", "ADD_WORKER_FAILED")));
                return;
            }
            onLoop(front, addWorker(front.context().channel().eventLoop(), url), error -> error == null
                    ? json(front, HttpResponseStatus.OK, Json.object(g -> {
                        g.writeBooleanField("success", true);
                        g.writeStringField("message", "Successfully added worker: " + url);
                        g.writeNullField("worker");
                    }))
                    : json(front, HttpResponseStatus.BAD_REQUEST, codedError(error, "ADD_WORKER_FAILED")));
        } else {
            request.release();
            FullHttpResponse response = Responses.empty(HttpResponseStatus.METHOD_NOT_ALLOWED);
            response.headers().set(HttpHeaderNames.ALLOW, "GET, POST");
            front.respond(response);
        }
    }

    private void workerItem(FrontendHandler front, FullHttpRequest request, String url) {
        HttpMethod method = request.method();
        request.release();
        if (method.equals(HttpMethod.GET)) {
            Worker worker = workers.get(url).orElse(null);
            if (worker == null) {
                front.respond(json(front, HttpResponseStatus.NOT_FOUND,
                        codedError("Worker " + url + " not found", "WORKER_NOT_FOUND")));
                return;
            }
            front.respond(json(front, HttpResponseStatus.OK, Json.object(g -> {
                g.writeStringField("url", worker.url());
                g.writeStringField("model_id", worker.modelId());
                g.writeBooleanField("is_healthy", worker.isHealthy());
            })));
        } else if (method.equals(HttpMethod.DELETE)) {
            workers.removeByBaseUrl(url);
            front.respond(json(front, HttpResponseStatus.OK, Json.object(g -> {
                g.writeBooleanField("success", true);
                g.writeStringField("message", "Worker " + url + " removed successfully");
                g.writeNullField("worker");
            })));
        } else {
            FullHttpResponse response = Responses.empty(HttpResponseStatus.METHOD_NOT_ALLOWED);
            response.headers().set(HttpHeaderNames.ALLOW, "GET, DELETE");
            front.respond(response);
        }
    }

    private String workersJson() {
        List<Worker> all = workers.all();
        return Json.object(g -> {
            g.writeArrayFieldStart("workers");
            for (Worker w : all) {
                g.writeStartObject();
                g.writeStringField("url", w.url());
                g.writeStringField("model_id", w.modelId());
                g.writeStringField("worker_type", w.role().name().toLowerCase(java.util.Locale.ROOT));
                g.writeBooleanField("is_healthy", w.isHealthy());
                g.writeNumberField("load", w.load());
                g.writeStringField("connection_mode", "http");
                g.writeNumberField("priority", 50);
                g.writeNumberField("cost", 1.0);
                if (w.bootstrapPort() != null) {
                    g.writeNumberField("bootstrap_port", w.bootstrapPort());
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeNumberField("total", all.size());
            g.writeObjectFieldStart("stats");
            g.writeNumberField("prefill_count", all.stream().filter(w -> w.role() == WorkerRole.PREFILL).count());
            g.writeNumberField("decode_count", all.stream().filter(w -> w.role() == WorkerRole.DECODE).count());
            g.writeNumberField("regular_count", all.stream().filter(w -> w.role() == WorkerRole.REGULAR).count());
            g.writeEndObject();
        });
    }

    private static String urlField(FullHttpRequest request) {
        if (!request.content().isReadable()) {
            return null;
        }
        try (JsonParser p = Router.bodySource(request.content()).open(Json.FACTORY)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            String url = null;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (name.equals("url") && value == JsonToken.VALUE_STRING) {
                    url = p.getText();
                } else {
                    p.skipChildren();
                }
            }
            return url;
        } catch (IOException e) {
            return null;
        }
    }

    private void flushCache(FrontendHandler front) {
        EventLoop loop = front.context().channel().eventLoop();
        List<CompletableFuture<Boolean>> calls = new ArrayList<>();
        for (String base : uniqueBaseUrls()) {
            calls.add(ControlClient.send(loop, HttpMethod.POST, base, "/flush_cache", outbound, null, FAN_OUT_TIMEOUT)
                    .handle((reply, error) -> reply != null && reply.ok()));
        }
        CompletableFuture<Boolean> all = CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new))
                .thenApply(v -> calls.stream().allMatch(CompletableFuture::join));
        onLoop(front, all, ok -> ok
                ? text(front, HttpResponseStatus.OK, "Cache flushed on all servers")
                : text(front, HttpResponseStatus.INTERNAL_SERVER_ERROR, "Cache flush failed on one or more servers"));
    }

    private void getLoads(FrontendHandler front) {
        EventLoop loop = front.context().channel().eventLoop();
        List<Worker> all = workers.all();
        List<CompletableFuture<Integer>> loads = new ArrayList<>();
        for (Worker w : all) {
            loads.add(ControlClient.send(loop, HttpMethod.GET, w.baseUrl(), "/get_load", outbound, null, FAN_OUT_TIMEOUT)
                    .handle((reply, error) -> reply != null && reply.ok() ? loadField(reply.body()) : -1));
        }
        CompletableFuture<String> body = CompletableFuture.allOf(loads.toArray(CompletableFuture[]::new))
                .thenApply(v -> Json.object(g -> {
                    g.writeArrayFieldStart("workers");
                    for (int i = 0; i < all.size(); i++) {
                        g.writeStartObject();
                        g.writeStringField("worker", all.get(i).url());
                        g.writeNumberField("load", loads.get(i).join());
                        g.writeEndObject();
                    }
                    g.writeEndArray();
                }));
        onLoop(front, body, json -> json(front, HttpResponseStatus.OK, json));
    }

    private static int loadField(byte[] body) {
        try (JsonParser p = Json.FACTORY.createParser(body)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return -1;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (name.equals("load") && value == JsonToken.VALUE_NUMBER_INT) {
                    return p.getIntValue();
                }
                p.skipChildren();
            }
        } catch (IOException e) {
            return -1;
        }
        return -1;
    }

    /**
     * {@code /v1/responses/{id}} (GET fans out, first 2xx wins, else the last reply), {@code .../cancel} (POST, same
     * rule), and the two sub-routes upstream leaves unimplemented (501).
     */
    void responsesItem(FrontendHandler front, FullHttpRequest request, RequestPath path) {
        String rest = path.path().substring("/v1/responses/".length());
        HttpMethod method = request.method();
        request.release();
        String[] parts = rest.split("/", -1);
        if (parts.length == 1 && method.equals(HttpMethod.GET)) {
            fanOut(front, HttpMethod.GET, path.rawTarget());
        } else if (parts.length == 1 && method.equals(HttpMethod.DELETE)) {
            front.respond(text(front, HttpResponseStatus.NOT_IMPLEMENTED, "Responses delete endpoint not implemented"));
        } else if (parts.length == 2 && parts[1].equals("cancel") && method.equals(HttpMethod.POST)) {
            fanOut(front, HttpMethod.POST, path.rawTarget());
        } else if (parts.length == 2 && parts[1].equals("input") && method.equals(HttpMethod.GET)) {
            front.respond(text(front, HttpResponseStatus.NOT_IMPLEMENTED,
                    "Responses list input items endpoint not implemented"));
        } else {
            front.respond(text(front, HttpResponseStatus.NOT_FOUND, "Not found"));
        }
    }

    private void fanOut(FrontendHandler front, HttpMethod method, String target) {
        EventLoop loop = front.context().channel().eventLoop();
        List<String> bases = uniqueBaseUrls();
        if (bases.isEmpty()) {
            front.respond(text(front, HttpResponseStatus.SERVICE_UNAVAILABLE, "No workers are available"));
            return;
        }
        CompletableFuture<ControlClient.Reply> result = fanOutFrom(loop, method, target, bases, 0, null);
        onLoop(front, result, reply -> {
            if (reply == null) {
                return text(front, HttpResponseStatus.INTERNAL_SERVER_ERROR, "Request failed on every worker");
            }
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                    HttpResponseStatus.valueOf(reply.status()), Unpooled.wrappedBuffer(reply.body()));
            String type = reply.headers().get(HttpHeaderNames.CONTENT_TYPE);
            if (type != null) {
                response.headers().set(HttpHeaderNames.CONTENT_TYPE, type);
            }
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, reply.body().length);
            return response;
        });
    }

    private CompletableFuture<ControlClient.Reply> fanOutFrom(EventLoop loop, HttpMethod method, String target,
                                                             List<String> bases, int index, ControlClient.Reply last) {
        if (index >= bases.size()) {
            return CompletableFuture.completedFuture(last);
        }
        return ControlClient.send(loop, method, bases.get(index), target, outbound, null, FAN_OUT_TIMEOUT)
                .handle((reply, error) -> reply)
                .thenCompose(reply -> reply != null && reply.ok()
                        ? CompletableFuture.completedFuture(reply)
                        : fanOutFrom(loop, method, target, bases, index + 1, reply != null ? reply : last));
    }

    private List<String> uniqueBaseUrls() {
        LinkedHashSet<String> bases = new LinkedHashSet<>();
        for (Worker w : workers.all()) {
            bases.add(w.baseUrl());
        }
        return List.copyOf(bases);
    }

    /** Completes {@code future} into a response written on the client's event loop. */
    static <T> void onLoop(FrontendHandler front, CompletableFuture<T> future,
                           java.util.function.Function<T, FullHttpResponse> toResponse) {
        EventLoop loop = front.context().channel().eventLoop();
        future.whenComplete((value, error) -> loop.execute(() -> {
            if (error != null) {
                front.respond(text(front, HttpResponseStatus.INTERNAL_SERVER_ERROR, "Internal error: " + error.getMessage()));
            } else {
                front.respond(toResponse.apply(value));
            }
        }));
    }

    private static String codedError(String message, String code) {
        return Json.object(g -> {
            g.writeStringField("error", message);
            g.writeStringField("code", code);
        });
    }

    private static FullHttpResponse text(FrontendHandler front, HttpResponseStatus status, String body) {
        return Responses.text(front.context().alloc(), status, body);
    }

    private static FullHttpResponse json(FrontendHandler front, HttpResponseStatus status, String body) {
        return Responses.json(front.context().alloc(), status, body);
    }

    private static FullHttpResponse jsonError(FrontendHandler front, String message) {
        return Responses.jsonError(front.context().alloc(), HttpResponseStatus.BAD_REQUEST, message);
    }
}
