package org.vllmrouter.server.route;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.settings.HealthSettings;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.config.WorkerUrl;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.server.http.AggregatedBody;
import org.vllmrouter.server.http.Json;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.http.Responses;
import org.vllmrouter.server.worker.StartupWait;
import org.vllmrouter.server.worker.WorkerFactory;

/**
 * Worker management with upstream's status codes and bodies: the query-string routes ({@code /add_worker},
 * {@code /remove_worker}, {@code /list_workers}), the REST ones ({@code /workers}, {@code /workers/{url}}), and the
 * fan-outs to every worker ({@code /flush_cache}, {@code /get_loads}).
 */
final class WorkerRoutes {
    private final HealthSettings health;
    private final WorkerRegistry workers;
    private final WorkerFactory factory;
    private final ControlCalls control;

    WorkerRoutes(HealthSettings health, WorkerRegistry workers, WorkerFactory factory, ControlCalls control) {
        this.health = health;
        this.workers = workers;
        this.factory = factory;
        this.control = control;
    }

    void addWorker(Reply reply, FullHttpRequest request, RequestPath path) {
        String url = urlParam(reply, path);
        if (url != null) {
            reply.sendWhenDone(addWorker(reply.loop(), url), error -> error == null
                    ? text(reply, HttpResponseStatus.OK, "Successfully added worker: " + UrlRedaction.redact(url))
                    : text(reply, HttpResponseStatus.BAD_REQUEST, error));
        }
    }

    void removeWorker(Reply reply, FullHttpRequest request, RequestPath path) {
        String url = urlParam(reply, path);
        if (url != null) {
            workers.removeByBaseUrl(url);
            reply.text(HttpResponseStatus.OK, "Successfully removed worker: " + UrlRedaction.redact(url));
        }
    }

    /** The {@code url} query parameter, or null once the client has its 400. */
    private static String urlParam(Reply reply, RequestPath path) {
        String url;
        try {
            url = path.param("url");
        } catch (RequestPath.InvalidPathException e) {
            reply.text(HttpResponseStatus.BAD_REQUEST, e.getMessage());
            return null;
        }
        if (url == null || url.isEmpty()) {
            reply.text(HttpResponseStatus.BAD_REQUEST, "Missing required query parameter 'url'");
            return null;
        }
        return url;
    }

    void listWorkers(Reply reply, FullHttpRequest request, RequestPath path) {
        reply.send(json(reply, HttpResponseStatus.OK, Json.object(g -> {
            g.writeArrayFieldStart("urls");
            for (Worker w : workers.all()) {
                g.writeString(w.shownUrl());
            }
            g.writeEndArray();
        })));
    }

    /** Waits for the worker's /health like upstream's add_worker, then registers it; completes with an error or null. */
    private CompletableFuture<String> addWorker(EventLoop loop, String url) {
        if (!url.startsWith("http://") && !url.startsWith("https://")) {
            return CompletableFuture.completedFuture("URL must start with http://, https://, or grpc://");
        }
        String problem = WorkerUrl.problem(url);
        if (problem != null) {
            return CompletableFuture.completedFuture("Invalid worker URL " + UrlRedaction.redact(url) + ": " + problem);
        }
        List<Worker> created;
        try {
            created = factory.create(url, WorkerRole.REGULAR, null);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.completedFuture("Invalid worker URL: " + e.getMessage());
        }
        if (workers.get(created.get(0).url()).isPresent()) {
            return CompletableFuture.completedFuture("Worker " + UrlRedaction.redact(url) + " already exists");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(health.startupTimeoutSecs());
        return StartupWait.untilHealthy(control.client(), loop, List.of(url), health.checkEndpoint(),
                        Math.max(1, health.startupCheckIntervalSecs()), deadline)
                .thenApply(outcome -> {
                    if (!outcome.healthy()) {
                        return "Timeout " + health.startupTimeoutSecs() + "s waiting for worker " + UrlRedaction.redact(url)
                                + " to become healthy (last health check: " + outcome.lastFailures() + ")";
                    }
                    boolean added = false;
                    for (Worker w : created) {
                        added |= workers.add(w);
                    }
                    return added ? null : "Worker " + UrlRedaction.redact(url) + " already exists";
                });
    }

    /** GET lists the workers; POST adds the one named by the JSON body's {@code url}. */
    void workers(Reply reply, FullHttpRequest request, RequestPath path) {
        if (request.method().equals(HttpMethod.GET)) {
            reply.send(json(reply, HttpResponseStatus.OK, workersJson()));
        } else if (request.method().equals(HttpMethod.POST)) {
            String url = urlField(request);
            if (url == null) {
                reply.send(json(reply, HttpResponseStatus.BAD_REQUEST, codedError(
                        "Invalid request body: expected a JSON object with a string field 'url'", "ADD_WORKER_FAILED")));
                return;
            }
            reply.sendWhenDone(addWorker(reply.loop(), url), error -> error == null
                    ? json(reply, HttpResponseStatus.OK, Json.object(g -> {
                        g.writeBooleanField("success", true);
                        g.writeStringField("message", "Successfully added worker: " + UrlRedaction.redact(url));
                        g.writeNullField("worker");
                    }))
                    : json(reply, HttpResponseStatus.BAD_REQUEST, codedError(error, "ADD_WORKER_FAILED")));
        } else {
            FullHttpResponse response = Responses.empty(HttpResponseStatus.METHOD_NOT_ALLOWED);
            response.headers().set(HttpHeaderNames.ALLOW, "GET, POST");
            reply.send(response);
        }
    }

    /** {@code /workers/{url}}: GET shows the worker, DELETE removes it. */
    void worker(Reply reply, FullHttpRequest request, RequestPath path) {
        String url = path.path().substring(RequestPath.WORKERS_PREFIX.length());
        HttpMethod method = request.method();
        if (method.equals(HttpMethod.GET)) {
            Worker worker = workers.get(url).orElse(null);
            if (worker == null) {
                reply.send(json(reply, HttpResponseStatus.NOT_FOUND,
                        codedError("Worker " + UrlRedaction.redact(url) + " not found", "WORKER_NOT_FOUND")));
                return;
            }
            reply.send(json(reply, HttpResponseStatus.OK, Json.object(g -> {
                g.writeStringField("url", worker.shownUrl());
                g.writeStringField("model_id", worker.modelId());
                g.writeBooleanField("is_healthy", worker.isHealthy());
            })));
        } else if (method.equals(HttpMethod.DELETE)) {
            workers.removeByBaseUrl(url);
            reply.send(json(reply, HttpResponseStatus.OK, Json.object(g -> {
                g.writeBooleanField("success", true);
                g.writeStringField("message", "Worker " + UrlRedaction.redact(url) + " removed successfully");
                g.writeNullField("worker");
            })));
        } else {
            FullHttpResponse response = Responses.empty(HttpResponseStatus.METHOD_NOT_ALLOWED);
            response.headers().set(HttpHeaderNames.ALLOW, "GET, DELETE");
            reply.send(response);
        }
    }

    private String workersJson() {
        List<Worker> all = workers.all();
        return Json.object(g -> {
            g.writeArrayFieldStart("workers");
            for (Worker w : all) {
                g.writeStartObject();
                g.writeStringField("url", w.shownUrl());
                g.writeStringField("model_id", w.modelId());
                g.writeStringField("worker_type", w.role().name().toLowerCase(Locale.ROOT));
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
        try (JsonParser p = AggregatedBody.source(request.content()).open(Json.FACTORY)) {
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

    /** POSTs {@code /flush_cache} to every worker host; 200 only when all of them succeeded. */
    void flushCache(Reply reply, FullHttpRequest request, RequestPath path) {
        EventLoop loop = reply.loop();
        List<CompletableFuture<Boolean>> calls = new ArrayList<>();
        for (String base : control.baseUrls()) {
            calls.add(control.send(loop, HttpMethod.POST, base, "/flush_cache")
                    .handle((answer, error) -> answer != null && answer.ok()));
        }
        CompletableFuture<Boolean> all = CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new))
                .thenApply(v -> calls.stream().allMatch(CompletableFuture::join));
        reply.sendWhenDone(all, ok -> ok
                ? text(reply, HttpResponseStatus.OK, "Cache flushed on all servers")
                : text(reply, HttpResponseStatus.INTERNAL_SERVER_ERROR, "Cache flush failed on one or more servers"));
    }

    /** Each worker's own {@code /get_load} answer ({@code -1} when it gave none). */
    void getLoads(Reply reply, FullHttpRequest request, RequestPath path) {
        EventLoop loop = reply.loop();
        List<Worker> all = workers.all();
        List<CompletableFuture<Integer>> loads = new ArrayList<>();
        for (Worker w : all) {
            loads.add(control.send(loop, HttpMethod.GET, w.baseUrl(), "/get_load")
                    .handle((answer, error) -> answer != null && answer.ok() ? loadField(answer.body()) : -1));
        }
        CompletableFuture<String> body = CompletableFuture.allOf(loads.toArray(CompletableFuture[]::new))
                .thenApply(v -> Json.object(g -> {
                    g.writeArrayFieldStart("workers");
                    for (int i = 0; i < all.size(); i++) {
                        g.writeStartObject();
                        g.writeStringField("worker", all.get(i).shownUrl());
                        g.writeNumberField("load", loads.get(i).join());
                        g.writeEndObject();
                    }
                    g.writeEndArray();
                }));
        reply.sendWhenDone(body, json -> json(reply, HttpResponseStatus.OK, json));
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

    private static String codedError(String message, String code) {
        return Json.object(g -> {
            g.writeStringField("error", message);
            g.writeStringField("code", code);
        });
    }

    private static FullHttpResponse text(Reply reply, HttpResponseStatus status, String body) {
        return Responses.text(reply.alloc(), status, body);
    }

    private static FullHttpResponse json(Reply reply, HttpResponseStatus status, String body) {
        return Responses.json(reply.alloc(), status, body);
    }
}
