package org.vllmrouter.mock;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The mock's API: answers each route in the shape vLLM (or SGLang, for {@code /generate})
 * would, with the latency model applied to generation routes. Faults and the API key were
 * handled upstream in the pipeline ({@link FaultInjector}).
 */
final class MockApiHandler extends SimpleChannelInboundHandler<FullHttpRequest> {

    static final int MAX_MODEL_LEN = 32_768;

    private static final Map<String, InferenceRequest.Kind> GENERATION_ROUTES = Map.of(
            "/v1/completions", InferenceRequest.Kind.COMPLETIONS,
            "/v1/chat/completions", InferenceRequest.Kind.CHAT,
            "/generate", InferenceRequest.Kind.GENERATE,
            "/inference/v1/generate", InferenceRequest.Kind.INFERENCE_GENERATE,
            "/v1/responses", InferenceRequest.Kind.RESPONSES);

    private static final String STORED_RESPONSES = "/v1/responses/";

    /** The trajectory a turn belongs to, for the engine model's recompute accounting and its answer's text. */
    private static final String SESSION_HEADER = "X-Session-ID";

    private static final byte[] SSE_DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);

    private final MockWorker worker;

    MockApiHandler(MockWorker worker) {
        this.worker = worker;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        if (req.decoderResult().isFailure()) {
            Replies.error(ctx, false, 400, "malformed HTTP request", worker.id());
            return;
        }
        String path = Routes.pathOf(req.uri());
        HttpMethod method = req.method();
        try {
            if (method.equals(HttpMethod.POST) && Routes.INFERENCE.contains(path)) {
                inference(ctx, keepAlive, path, req);
            } else if (method.equals(HttpMethod.GET) && Routes.INFO.contains(path)) {
                info(ctx, keepAlive, path);
            } else if (method.equals(HttpMethod.POST) && Routes.CACHE.contains(path)) {
                worker.flushCache();
                Replies.text(ctx, keepAlive, 200, "ok");
            } else if (EngineRoutes.serves(method, path)) {
                byte[] bytes = ByteBufUtil.getBytes(req.content());
                EngineRoutes.answer(ctx, keepAlive, req, path, bytes.length == 0 ? null : parseObject(bytes), worker);
            } else if (path.equals(Routes.CAPTURED) && method.equals(HttpMethod.GET)) {
                Replies.json(ctx, keepAlive, 200, capturedAsJson());
            } else if (path.equals(Routes.CAPTURED) && method.equals(HttpMethod.DELETE)) {
                worker.clearCaptured();
                Replies.text(ctx, keepAlive, 200, "ok");
            } else if (path.startsWith(STORED_RESPONSES) && path.length() > STORED_RESPONSES.length()) {
                storedResponse(ctx, keepAlive, method, path.substring(STORED_RESPONSES.length()));
            } else if (Routes.INFERENCE.contains(path) || Routes.INFO.contains(path)
                    || Routes.CACHE.contains(path) || path.equals(Routes.CAPTURED)) {
                Replies.error(ctx, keepAlive, 405, "Method Not Allowed", worker.id());
            } else {
                Replies.error(ctx, keepAlive, 404, "Not Found: " + path, worker.id());
            }
        } catch (BadRequestException e) {
            Replies.error(ctx, keepAlive, 400, e.getMessage(), worker.id());
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // A reset connection is routine for a test server; anything else is worth a line.
        if (!(cause instanceof IOException)) {
            System.err.println("mock worker " + worker.id() + ": " + cause);
        }
        ctx.close();
    }

    /**
     * {@code GET /v1/responses/{id}} and {@code POST /v1/responses/{id}/cancel}: only the worker
     * that produced a response knows it (404 elsewhere), which is what a router's fan-out needs.
     */
    private void storedResponse(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String rest) {
        boolean cancel = rest.endsWith("/cancel");
        String id = cancel ? rest.substring(0, rest.length() - "/cancel".length()) : rest;
        if (id.isEmpty() || id.contains("/")) {
            Replies.error(ctx, keepAlive, 404, "Not Found: /v1/responses/" + rest, worker.id());
            return;
        }
        if (!method.equals(cancel ? HttpMethod.POST : HttpMethod.GET)) {
            Replies.error(ctx, keepAlive, 405, "Method Not Allowed", worker.id());
            return;
        }
        ObjectNode stored = worker.storedResponse(id, cancel);
        if (stored == null) {
            Replies.error(ctx, keepAlive, 404, "Response with id '" + id + "' not found.", worker.id());
            return;
        }
        Replies.json(ctx, keepAlive, 200, stored);
    }

    private void info(ChannelHandlerContext ctx, boolean keepAlive, String path) {
        Knobs k = worker.knobs();
        switch (path) {
            case "/health", "/health_generate" -> {
                if (k.hangHealth()) {
                    return;
                }
                boolean failedByTime = k.healthFailAfterMs() > 0 && worker.uptimeMillis() >= k.healthFailAfterMs();
                if (!k.healthy() || failedByTime) {
                    Replies.text(ctx, keepAlive, 500, "bad");
                } else {
                    Replies.text(ctx, keepAlive, 200, "ok");
                }
            }
            case "/v1/models" -> {
                ObjectNode root = Replies.JSON.createObjectNode();
                root.put("object", "list");
                ObjectNode m = root.putArray("data").addObject();
                m.put("id", k.model());
                m.put("object", "model");
                m.put("created", System.currentTimeMillis() / 1000);
                m.put("owned_by", "vllm");
                m.put("root", k.model());
                m.putNull("parent");
                m.put("max_model_len", MAX_MODEL_LEN);
                Replies.json(ctx, keepAlive, 200, root);
            }
            case "/get_model_info" -> {
                ObjectNode root = Replies.JSON.createObjectNode();
                root.put("model", k.model());
                root.put("model_path", k.model());
                root.put("tokenizer_path", k.model());
                root.put("is_generation", true);
                root.put("vocab_size", MockTokenizer.VOCAB_SIZE);
                root.put("worker_id", worker.id());
                Replies.json(ctx, keepAlive, 200, root);
            }
            case "/get_server_info" -> {
                if (k.noServerInfo()) {
                    Replies.error(ctx, keepAlive, 404, "Not Found: " + path, worker.id());
                    return;
                }
                ObjectNode root = Replies.JSON.createObjectNode();
                root.put("worker_id", worker.id());
                root.put("model", k.model());
                root.put("load_in_flight", worker.inFlight());
                root.put("queued", worker.queued());
                root.put("requests", worker.requestCount());
                ObjectNode cache = root.putObject("cache");
                cache.put("size", worker.cacheBlocks());
                cache.put("hit_rate", worker.cacheHitRate());
                root.put("dp_size", 1);
                root.put("model_id", k.model());
                root.put("model_path", k.model());
                root.put("instance_id", worker.id());
                root.put("kv_block_size", k.blockSize());
                root.put("effective_attention_block_size", k.blockSize());
                Replies.json(ctx, keepAlive, 200, root);
            }
            case "/kv_event_sources" -> Replies.json(ctx, keepAlive, 200, kvEventSources());
            case "/metrics" -> Replies.text(ctx, keepAlive, 200,
                    k.metricsText() != null ? k.metricsText() : EngineMetrics.prometheus(worker));
            case "/engine_stats" -> {
                if (worker.engine() == null) {
                    Replies.error(ctx, keepAlive, 404, "Not Found: this worker runs no engine model", worker.id());
                } else {
                    Replies.json(ctx, keepAlive, 200, EngineMetrics.stats(worker));
                }
            }
            case "/get_load" -> Replies.json(ctx, keepAlive, 200,
                    Replies.JSON.createObjectNode().put("load", worker.inFlight()).put("worker_id", worker.id()));
            case "/load" -> Replies.json(ctx, keepAlive, 200,
                    Replies.JSON.createObjectNode().put("server_load", worker.inFlight()).put("worker_id", worker.id()));
            default -> throw new IllegalStateException(path);
        }
    }

    /** vLLM's per-DP-rank map; empty when the worker publishes no KV events. */
    private ObjectNode kvEventSources() {
        ObjectNode root = Replies.JSON.createObjectNode();
        KvEventPublisher kv = worker.kvEvents();
        if (kv != null) {
            ObjectNode rank = root.putObject("0");
            rank.put("endpoint", kv.endpoint());
            rank.put("replay_endpoint", kv.replayEndpoint());
            rank.put("topic", kv.topic());
            rank.put("hwm", KvEventPublisher.HWM);
            rank.put("buffer_steps", KvEventPublisher.BUFFER_STEPS);
            rank.put("publisher", "zmq");
            rank.put("enable_kv_cache_events", true);
            rank.put("encoding", "msgpack");
            rank.put("schema_version", 1);
        }
        return root;
    }

    private void inference(ChannelHandlerContext ctx, boolean keepAlive, String path, FullHttpRequest req) {
        byte[] bytes = ByteBufUtil.getBytes(req.content());
        JsonNode body = parseObject(bytes);
        String raw = new String(bytes, StandardCharsets.UTF_8);
        InferenceRequest.Kind kind = GENERATION_ROUTES.get(path);
        if (kind == null) {
            Replies.json(ctx, keepAlive, 200, UtilityRoutes.answer(path, body, raw, worker));
            return;
        }
        InferenceRequest ir = InferenceRequest.parse(kind, body, worker.knobs().model());
        if (ir.stream() && (kind == InferenceRequest.Kind.INFERENCE_GENERATE || kind == InferenceRequest.Kind.RESPONSES)) {
            throw new BadRequestException("stream is not supported on " + path + " by the mock");
        }
        if (worker.engine() != null
                && (kind == InferenceRequest.Kind.COMPLETIONS || kind == InferenceRequest.Kind.CHAT)) {
            ModelTurn.serve(ir, req.headers().get(SESSION_HEADER), worker, ctx, keepAlive);
            return;
        }
        Generation g = new Generation(ir, body, raw, worker);
        worker.engineState().admit(() -> worker.slots().acquire(() -> ctx.executor().execute(() -> {
            if (ir.stream()) {
                startStream(ctx, keepAlive, g);
            } else {
                EngineState.Pending pending = worker.engineState().begin(aborted -> ctx.executor().execute(() -> {
                    try {
                        Replies.json(ctx, keepAlive, 200, aborted ? EngineRoutes.aborted(g.fullAnswer()) : g.fullAnswer());
                    } finally {
                        worker.slots().release();
                    }
                }));
                after(ctx, g.prefillMicros() + g.decodeMicros(g.completionTokens()), () -> worker.engineState().complete(pending));
            }
        })));
    }

    /**
     * Streams the answer as SSE: {@code stream-chunks} content chunks (the first after the
     * prefill time, then one per decode share plus {@code slow-stream-ms}), an optional usage
     * chunk, then {@code data: [DONE]}. Each chunk is flushed on its own so a client sees them
     * arrive one by one.
     */
    private void startStream(ChannelHandlerContext ctx, boolean keepAlive, Generation g) {
        after(ctx, g.prefillMicros(), () -> {
            ctx.write(Replies.sseHead(keepAlive));
            streamChunk(ctx, keepAlive, g, 0, worker.knobs().streamChunks());
        });
    }

    private void streamChunk(ChannelHandlerContext ctx, boolean keepAlive, Generation g, int i, int chunks) {
        if (!ctx.channel().isActive()) {
            worker.slots().release();
            return;
        }
        int total = g.outputIds.length;
        if (i < chunks) {
            int from = (int) ((long) total * i / chunks);
            int to = (int) ((long) total * (i + 1) / chunks);
            long wait = g.decodeMicros(to - from) + (i == 0 ? 0 : worker.knobs().slowStreamMs() * 1000);
            after(ctx, wait, () -> {
                if (!ctx.channel().isActive()) {
                    worker.slots().release();
                    return;
                }
                ctx.writeAndFlush(sseEvent(g.streamChunk(i, chunks, from, to)));
                streamChunk(ctx, keepAlive, g, i + 1, chunks);
            });
            return;
        }
        try {
            if (g.req.includeUsage()) {
                ctx.write(sseEvent(g.usageChunk()));
            }
            ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(SSE_DONE)));
            var done = ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
            if (!keepAlive) {
                done.addListener(ChannelFutureListener.CLOSE);
            }
        } finally {
            worker.slots().release();
        }
    }

    /** Runs {@code task} on this connection's event loop after {@code micros} (now when 0). */
    private static void after(ChannelHandlerContext ctx, long micros, Runnable task) {
        if (micros <= 0) {
            task.run();
        } else {
            ctx.executor().schedule(task, micros, TimeUnit.MICROSECONDS);
        }
    }

    private static DefaultHttpContent sseEvent(JsonNode chunk) {
        byte[] json;
        try {
            json = Replies.JSON.writeValueAsBytes(chunk);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise a mock chunk", e);
        }
        byte[] event = new byte[json.length + 8];
        System.arraycopy("data: ".getBytes(StandardCharsets.US_ASCII), 0, event, 0, 6);
        System.arraycopy(json, 0, event, 6, json.length);
        event[event.length - 2] = '\n';
        event[event.length - 1] = '\n';
        return new DefaultHttpContent(Unpooled.wrappedBuffer(event));
    }

    private static JsonNode parseObject(byte[] bytes) {
        if (bytes.length == 0) {
            throw new BadRequestException("request body must be a JSON object");
        }
        JsonNode body;
        try {
            body = Replies.JSON.readTree(bytes);
        } catch (JsonProcessingException e) {
            throw new BadRequestException("invalid JSON body: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new BadRequestException("unreadable body: " + e.getMessage());
        }
        if (body == null || !body.isObject()) {
            throw new BadRequestException("request body must be a JSON object");
        }
        return body;
    }

    private ArrayNode capturedAsJson() {
        ArrayNode list = Replies.JSON.createArrayNode();
        for (CapturedRequest r : worker.captured()) {
            ObjectNode o = list.addObject();
            o.put("method", r.method());
            o.put("uri", r.uri());
            o.put("path", r.path());
            ObjectNode headers = o.putObject("headers");
            for (Map.Entry<String, String> h : r.headers()) {
                headers.put(h.getKey().toLowerCase(java.util.Locale.ROOT), h.getValue());
            }
            o.put("body", r.bodyText());
            o.put("received_at_ms", r.receivedAtMillis());
        }
        return list;
    }
}
