package org.vllmrouter.server.route;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.QueryStringEncoder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import java.util.function.Function;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.server.http.Json;
import org.vllmrouter.server.http.JsonBodyCheck;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.http.Responses;

/**
 * The engine-control calls a trainer makes between steps (pause, resume, sleep, weight sync, prefix-cache reset,
 * LoRA adapters, world size), relayed concurrently to every registered worker host, or to the one named by
 * {@code ?worker=URL}. The client gets every worker's answer, named: 200 when all of them answered 2xx, else 502
 * with the same list. Nothing is retried (a weight update is not idempotent), and bad input is refused before
 * anything is sent.
 *
 * <p>The router keeps the pause state these calls leave on each worker (see {@link org.vllmrouter.core.worker.PauseGate}):
 * a {@code /pause} closes the workers' gates before it is sent, so turns arriving while the engines drain wait at the
 * router, and opens them again on a worker that did not pause; a {@code /resume} opens a gate once its worker has
 * resumed. A reset prefix cache (or a pause with {@code clear_cache}) is reported to {@code cacheReset}, so the
 * policies' cache models forget what those workers held.
 */
final class EngineControlRoutes {
    private static final String WORKER_PARAM = "worker";

    private enum Body { NONE_OR_JSON, JSON }

    private enum Effect { NONE, PAUSE, RESUME, CACHE_RESET }

    private static final Set<String> PAUSE_MODES = Set.of("keep", "abort", "wait");
    private static final Set<String> BOOLEANS = Set.of("true", "false", "1", "0");

    private record Outcome(String worker, int status, byte[] body, String error) {
        boolean ok() {
            return error == null && status >= 200 && status < 300;
        }
    }

    private final ControlCalls control;
    private final Duration timeout;
    private final Consumer<List<Worker>> cacheReset;

    /** {@code timeout} bounds each worker's call (the request timeout: a weight update or a drain is slow). */
    EngineControlRoutes(ControlCalls control, Duration timeout, Consumer<List<Worker>> cacheReset) {
        this.control = control;
        this.timeout = timeout;
        this.cacheReset = cacheReset;
    }

    /** The POST routes and the handler of each; {@code /get_world_size} is {@link #worldSize}. */
    Map<String, RouteHandler> postRoutes() {
        return Map.ofEntries(
                Map.entry("/pause", this::pause),
                Map.entry("/resume", (r, q, p) -> relay(r, q, p, Body.NONE_OR_JSON, Effect.RESUME)),
                Map.entry("/sleep", this::sleep),
                Map.entry("/wake_up", (r, q, p) -> relay(r, q, p, Body.NONE_OR_JSON, Effect.NONE)),
                Map.entry("/reset_prefix_cache", (r, q, p) -> relay(r, q, p, Body.NONE_OR_JSON, Effect.CACHE_RESET)),
                Map.entry("/collective_rpc", json()),
                Map.entry("/init_weight_transfer_engine", json()),
                Map.entry("/update_weights", json()),
                Map.entry("/fetch_weights", (r, q, p) -> relay(r, q, p, Body.NONE_OR_JSON, Effect.NONE)),
                Map.entry("/v1/load_lora_adapter", json()),
                Map.entry("/v1/unload_lora_adapter", json()),
                Map.entry("/skyrl/v1/load_lora_adapter", json()));
    }

    private RouteHandler json() {
        return (r, q, p) -> relay(r, q, p, Body.JSON, Effect.NONE);
    }

    private void pause(Reply reply, FullHttpRequest request, RequestPath path) {
        String mode = param(reply, path, "mode");
        String clear = param(reply, path, "clear_cache");
        if (reply.request() == null) {
            return;
        }
        if (mode != null && !PAUSE_MODES.contains(mode)) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST,
                    "Unknown pause mode '" + mode + "': expected one of keep, abort, wait");
        } else if (clear != null && !BOOLEANS.contains(clear.toLowerCase(Locale.ROOT))) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST,
                    "Query parameter 'clear_cache' must be true or false, got '" + clear + "'");
        } else {
            relay(reply, request, path, Body.NONE_OR_JSON, Effect.PAUSE);
        }
    }

    private void sleep(Reply reply, FullHttpRequest request, RequestPath path) {
        String level = param(reply, path, "level");
        if (reply.request() == null) {
            return;
        }
        if (level != null && !level.matches("[0-9]{1,9}")) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST,
                    "Query parameter 'level' must be a non-negative integer, got '" + level + "'");
        } else {
            relay(reply, request, path, Body.NONE_OR_JSON, Effect.NONE);
        }
    }

    /** {@code GET /get_world_size}: every worker's answer, and the sum of their {@code world_size} when all gave one. */
    void worldSize(Reply reply, FullHttpRequest request, RequestPath path) {
        List<String> targets = targets(reply, path);
        if (targets == null) {
            return;
        }
        fanOut(reply, HttpMethod.GET, targets, target(path), null, outcomes -> {
            long sum = 0;
            for (Outcome o : outcomes) {
                long size = o.ok() ? worldSizeField(o.body()) : -1;
                if (size < 0) {
                    return -1L;
                }
                sum += size;
            }
            return sum;
        }, Effect.NONE);
    }

    private void relay(Reply reply, FullHttpRequest request, RequestPath path, Body rule, Effect effect) {
        List<String> targets = targets(reply, path);
        if (targets == null) {
            return;
        }
        boolean hasBody = request.content().isReadable();
        if (rule == Body.JSON && !hasBody) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST, path.path() + " needs a JSON body");
            return;
        }
        if (hasBody) {
            String problem = JsonBodyCheck.problem(request.content(), false);
            if (problem != null) {
                reply.jsonError(HttpResponseStatus.BAD_REQUEST, problem);
                return;
            }
        }
        byte[] body = hasBody ? ByteBufUtil.getBytes(request.content()) : null;
        fanOut(reply, HttpMethod.POST, targets, target(path), body, outcomes -> null, effect);
    }

    /**
     * Sends the call to every target at once and answers with every outcome; {@code summary} adds a
     * {@code world_size} when it gives a non-negative number.
     */
    private void fanOut(Reply reply, HttpMethod method, List<String> targets, String target, byte[] body,
                        Function<List<Outcome>, Long> summary, Effect effect) {
        EventLoop loop = reply.loop();
        if (effect == Effect.PAUSE) {
            targets.forEach(base -> control.workersAt(base).forEach(w -> w.pause().pause()));
        }
        List<CompletableFuture<Outcome>> calls = new ArrayList<>(targets.size());
        for (String base : targets) {
            String shown = UrlRedaction.redact(base);
            calls.add(control.send(loop, method, base, target, body, timeout)
                    .handle((answer, error) -> error != null
                            ? new Outcome(shown, 0, null, describe(error))
                            : new Outcome(shown, answer.status(), answer.body(), null))
                    .thenApply(outcome -> {
                        settle(effect, base, outcome.ok(), target);
                        return outcome;
                    }));
        }
        CompletableFuture<List<Outcome>> all = CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new))
                .thenApply(v -> calls.stream().map(CompletableFuture::join).toList());
        reply.sendWhenDone(all, outcomes -> {
            boolean success = outcomes.stream().allMatch(Outcome::ok);
            Long total = summary.apply(outcomes);
            return Responses.json(reply.alloc(),
                    success ? HttpResponseStatus.OK : HttpResponseStatus.BAD_GATEWAY, Json.object(g -> {
                        g.writeBooleanField("success", success);
                        if (total != null && total >= 0) {
                            g.writeNumberField("world_size", total);
                        }
                        g.writeArrayFieldStart("failed");
                        for (Outcome o : outcomes) {
                            if (!o.ok()) {
                                g.writeString(o.worker());
                            }
                        }
                        g.writeEndArray();
                        g.writeArrayFieldStart("results");
                        for (Outcome o : outcomes) {
                            write(g, o);
                        }
                        g.writeEndArray();
                    }));
        });
    }

    /** What an answered (or failed) call changes in the router's view of the worker at {@code base}. */
    private void settle(Effect effect, String base, boolean ok, String target) {
        List<Worker> at = control.workersAt(base);
        switch (effect) {
            case PAUSE -> {
                if (!ok) {
                    // The engine did not pause (or said nothing of it): holding its turns could only time them out.
                    at.forEach(w -> w.pause().resume());
                } else if (clearsCache(target)) {
                    cacheReset.accept(at);
                }
            }
            case RESUME -> {
                if (ok) {
                    at.forEach(w -> w.pause().resume());
                }
            }
            case CACHE_RESET -> {
                if (ok) {
                    cacheReset.accept(at);
                }
            }
            case NONE -> { }
        }
    }

    private static boolean clearsCache(String target) {
        int q = target.indexOf('?');
        if (q < 0) {
            return false;
        }
        List<String> values = new QueryStringDecoder(target).parameters().get("clear_cache");
        return values != null && !values.isEmpty()
                && (values.get(0).equalsIgnoreCase("true") || values.get(0).equals("1"));
    }

    /** The worker hosts the call goes to, or null once the client has its 4xx/503. */
    private List<String> targets(Reply reply, RequestPath path) {
        String named = param(reply, path, WORKER_PARAM);
        if (reply.request() == null) {
            return null;
        }
        if (named != null) {
            String base = control.registeredBase(named);
            if (base == null) {
                reply.jsonError(HttpResponseStatus.NOT_FOUND,
                        "Worker " + UrlRedaction.redact(named) + " is not registered; nothing was sent");
                return null;
            }
            return List.of(base);
        }
        List<String> bases = control.baseUrls();
        if (bases.isEmpty()) {
            reply.jsonError(HttpResponseStatus.SERVICE_UNAVAILABLE, "No workers are registered; nothing was sent");
            return null;
        }
        return bases;
    }

    /** A single query parameter, or null; a conflicting repeat answers 400 (the reply then holds no request). */
    private static String param(Reply reply, RequestPath path, String name) {
        if (reply.request() == null) {
            return null;
        }
        try {
            return path.param(name);
        } catch (RequestPath.InvalidPathException e) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST, e.getMessage());
            return null;
        }
    }

    /** The path on the worker: the client's path and query, without the router's own {@code worker} parameter. */
    private static String target(RequestPath path) {
        if (!path.params().containsKey(WORKER_PARAM)) {
            return path.rawTarget();
        }
        QueryStringEncoder encoder = new QueryStringEncoder(path.rawPath(), StandardCharsets.UTF_8);
        path.params().forEach((name, values) -> {
            if (!name.equals(WORKER_PARAM)) {
                values.forEach(v -> encoder.addParam(name, v));
            }
        });
        return encoder.toString();
    }

    private static void write(JsonGenerator g, Outcome o) throws IOException {
        g.writeStartObject();
        g.writeStringField("worker", o.worker());
        if (o.error() != null) {
            g.writeStringField("error", o.error());
        } else {
            g.writeNumberField("status", o.status());
            String text = new String(o.body(), StandardCharsets.UTF_8);
            if (isJson(o.body())) {
                g.writeFieldName("body");
                g.writeRawValue(text);
            } else {
                g.writeStringField("body", text);
            }
        }
        g.writeEndObject();
    }

    private static boolean isJson(byte[] body) {
        if (body.length == 0) {
            return false;
        }
        try (JsonParser p = Json.FACTORY.createParser(body)) {
            if (p.nextToken() == null) {
                return false;
            }
            p.skipChildren();
            return p.nextToken() == null;
        } catch (IOException e) {
            return false;
        }
    }

    private static long worldSizeField(byte[] body) {
        try (JsonParser p = Json.FACTORY.createParser(body)) {
            JsonToken first = p.nextToken();
            if (first == JsonToken.VALUE_NUMBER_INT) {
                return p.getLongValue();
            }
            if (first != JsonToken.START_OBJECT) {
                return -1;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (name.equals("world_size") && value == JsonToken.VALUE_NUMBER_INT) {
                    return p.getLongValue();
                }
                p.skipChildren();
            }
        } catch (IOException e) {
            return -1;
        }
        return -1;
    }

    private static String describe(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null
                ? error.getCause() : error;
        String message = cause.getMessage();
        return message == null ? cause.getClass().getSimpleName() : message;
    }
}
