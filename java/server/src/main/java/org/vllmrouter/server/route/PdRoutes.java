package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.time.Duration;
import java.util.Set;
import org.vllmrouter.core.config.PdMode;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.settings.PdSettings;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.server.http.JsonBodyCheck;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.kv.KvPlacement;
import org.vllmrouter.server.metrics.RouterMetrics;
import org.vllmrouter.server.proxy.Proxy;
import org.vllmrouter.server.proxy.WorkerCalls;
import org.vllmrouter.server.worker.ControlClient;

/**
 * Prefill/decode disaggregation. Prefill and decode workers are chosen independently by their own policy instances
 * (so sticky sessions pin a worker per role). vLLM two-stage mode: prefill with {@code max_tokens=1} and
 * {@code do_remote_decode}, then decode with the prefill's {@code kv_transfer_params}. SGLang bootstrap mode: the
 * request goes to both at once with {@code bootstrap_host/port/room} added and the decode answer is relayed. The
 * decode request is the client's bytes with the new fields spliced in at the front of the object, so everything
 * else reaches the worker untouched. The decode stage is relayed by the proxy unless logprobs must be merged; the
 * other stages are one-shot calls accounted the same way (see {@link WorkerCalls}). A kv_aware prefill policy gets
 * what each prefill worker holds of the prompt first, as the regular route's policy does ({@link KvPlacement}). Each
 * request runs as a {@link PdExchange}; these are the routes and what their exchanges share.
 */
final class PdRoutes {
    private static final Set<String> PIPELINE_ROUTES = Set.of("/v1/chat/completions", "/v1/completions",
            "/inference/v1/generate", "/generate");

    private final boolean vllmMode;
    final WorkerRegistry workers;
    final PolicyRegistry policies;
    final Proxy proxy;
    final WorkerCalls calls;
    final RouterMetrics metrics;
    final ControlClient client;
    final Duration stageTimeout;
    private final RoutingInput input;
    private final KvPlacement kv;
    /** What the stages send as authorization; null for none. */
    final String stageAuthorization;

    /** {@code kv} null: no configured policy weighs prefixes, and none gets any. */
    PdRoutes(PdSettings settings, WorkerRegistry workers, PolicyRegistry policies, Proxy proxy, WorkerCalls calls,
             RouterMetrics metrics, ControlClient client,
             RoutingInput input, KvPlacement kv) {
        this.vllmMode = settings.mode() == PdMode.VLLM;
        String key = settings.openaiApiKey();
        this.stageAuthorization = key == null || key.isEmpty() ? null : "Bearer " + key;
        this.workers = workers;
        this.policies = policies;
        this.proxy = proxy;
        this.calls = calls;
        this.client = client;
        this.metrics = metrics;
        this.stageTimeout = Duration.ofSeconds(Math.max(1, settings.requestTimeoutSecs()));
        this.input = input;
        this.kv = kv;
    }

    /** Whether the inference route {@code route} runs through the PD pipeline (the others go to regular workers). */
    static boolean pipelines(String route) {
        return PIPELINE_ROUTES.contains(route);
    }

    /** The handler of the pipelined inference route {@code route}, whose path on the workers is {@code workerPath}. */
    InferenceHandler pipeline(String route, String workerPath) {
        boolean twoStage = vllmMode && !route.equals("/generate");
        return (reply, request, path, admission) -> {
            RoutingRequest routing = input.read(reply, request, true);
            if (routing == null) {
                admission.run();
                return;
            }
            String target = path.rawQuery().isEmpty() ? workerPath : workerPath + "?" + path.rawQuery();
            if (kv == null || !policies.prefillPolicy().usesPrefixResidency()) {
                new PdExchange(this, reply, route, target, routing, admission).start(twoStage);
                return;
            }
            kv.residency(reply.loop(), route, request, routing.model(), WorkerRole.PREFILL, reply.span())
                    .thenAccept(prefix -> {
                        routing.withPrefix(prefix);
                        new PdExchange(this, reply, route, target, routing, admission).start(twoStage);
                    });
        };
    }

    /** The proxy fallback in PD mode: POST only, through the mode's pipeline on the same path. */
    void fallback(Reply reply, FullHttpRequest request, RequestPath path, RoutingRequest routing) {
        if (!request.method().equals(HttpMethod.POST)) {
            reply.text(HttpResponseStatus.METHOD_NOT_ALLOWED, "Only POST requests are supported for transparent proxy");
            return;
        }
        String problem = JsonBodyCheck.problem(request.content(), true);
        if (problem != null) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST, problem);
            return;
        }
        new PdExchange(this, reply, "fallback", path.rawTarget(), routing, () -> {}).start(vllmMode);
    }
}
