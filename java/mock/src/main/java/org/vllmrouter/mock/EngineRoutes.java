package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * vLLM's engine-control routes, as a trainer calls them between steps: pause/resume (see {@link EngineState}),
 * sleep/wake, weight sync ({@code /update_weights} advances the weight version every generation answer reports),
 * collective RPCs, LoRA adapters and the world size. Bodies these routes need are JSON objects (400 otherwise).
 */
final class EngineRoutes {
    static final Set<String> POST = Set.of("/pause", "/resume", "/sleep", "/wake_up", "/collective_rpc",
            "/init_weight_transfer_engine", "/update_weights", "/fetch_weights", "/v1/load_lora_adapter",
            "/v1/unload_lora_adapter", "/skyrl/v1/load_lora_adapter");
    static final Set<String> GET = Set.of("/is_paused", "/is_sleeping", "/get_world_size");
    private static final Set<String> JSON_BODY = Set.of("/collective_rpc", "/update_weights",
            "/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/skyrl/v1/load_lora_adapter");
    private static final Map<String, EngineState.Mode> MODES = Map.of("keep", EngineState.Mode.KEEP,
            "abort", EngineState.Mode.ABORT, "wait", EngineState.Mode.WAIT);

    private EngineRoutes() {}

    static boolean serves(HttpMethod method, String path) {
        return method.equals(HttpMethod.POST) ? POST.contains(path) : method.equals(HttpMethod.GET) && GET.contains(path);
    }

    static void answer(ChannelHandlerContext ctx, boolean keepAlive, FullHttpRequest req, String path,
                       JsonNode body, MockWorker worker) {
        EngineState engine = worker.engineState();
        if (JSON_BODY.contains(path) && (body == null || !body.isObject())) {
            throw new BadRequestException(path + " needs a JSON object body");
        }
        Map<String, List<String>> query = new QueryStringDecoder(req.uri()).parameters();
        ObjectNode out = Replies.JSON.createObjectNode();
        switch (path) {
            case "/pause" -> {
                String name = first(query, "mode", "abort").toLowerCase(Locale.ROOT);
                EngineState.Mode mode = MODES.get(name);
                if (mode == null) {
                    throw new BadRequestException("mode must be one of keep, abort, wait; got " + name);
                }
                if (Boolean.parseBoolean(first(query, "clear_cache", "false"))) {
                    worker.flushCache();
                }
                engine.pause(mode, () -> ctx.executor().execute(
                        () -> Replies.json(ctx, keepAlive, 200, out.put("status", "paused").put("mode", name))));
                return;
            }
            case "/resume" -> {
                engine.resume();
                out.put("status", "resumed");
            }
            case "/is_paused" -> out.put("is_paused", engine.isPaused());
            case "/sleep" -> {
                engine.asleep(true);
                out.put("status", "sleeping");
            }
            case "/wake_up" -> {
                engine.asleep(false);
                out.put("status", "awake");
            }
            case "/is_sleeping" -> out.put("is_sleeping", engine.isAsleep());
            case "/update_weights" -> {
                if (engine.failsWeightUpdates()) {
                    Replies.error(ctx, keepAlive, 500, "weight update failed on " + worker.id(), worker.id());
                    return;
                }
                JsonNode v = body.get("weight_version");
                out.put("weight_version", engine.updateWeights(v != null && v.canConvertToLong() ? v.asLong() : null));
            }
            case "/collective_rpc" -> out.putArray("results").addNull();
            case "/get_world_size" -> out.put("world_size", 1);
            default -> out.put("status", "ok");
        }
        out.put("worker_id", worker.id());
        Replies.json(ctx, keepAlive, 200, out);
    }

    /** vLLM's answer to a generation its pause aborted: what was produced so far, finish reason {@code abort}. */
    static JsonNode aborted(JsonNode answer) {
        JsonNode choices = answer.get("choices");
        if (choices != null) {
            choices.forEach(c -> {
                if (c instanceof ObjectNode choice) {
                    choice.put("finish_reason", "abort");
                }
            });
        }
        return answer;
    }

    private static String first(Map<String, List<String>> query, String name, String otherwise) {
        List<String> values = query.get(name);
        return values == null || values.isEmpty() ? otherwise : values.get(0);
    }
}
