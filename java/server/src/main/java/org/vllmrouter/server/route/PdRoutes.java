package org.vllmrouter.server.route;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.logging.Logger;
import org.vllmrouter.core.config.PdMode;
import org.vllmrouter.core.settings.PdSettings;
import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.policy.PrefixResidency;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.server.http.FrontendHandler;
import org.vllmrouter.server.http.JsonBodyCheck;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.http.Responses;
import org.vllmrouter.server.kv.KvPlacement;
import org.vllmrouter.server.metrics.RouterMetrics;
import org.vllmrouter.server.proxy.Hop;
import org.vllmrouter.server.proxy.LogprobsMerge;
import org.vllmrouter.server.proxy.ProxiedRequest;
import org.vllmrouter.server.proxy.Proxy;
import org.vllmrouter.server.proxy.WorkerAddress;
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
 * what each prefill worker holds of the prompt first, as the regular route's policy does ({@link KvPlacement}).
 */
final class PdRoutes {
    private static final Logger LOG = Logger.getLogger(PdRoutes.class.getName());
    private static final Set<String> PIPELINE_ROUTES = Set.of("/v1/chat/completions", "/v1/completions",
            "/inference/v1/generate", "/generate");

    private final boolean vllmMode;
    private final WorkerRegistry workers;
    private final PolicyRegistry policies;
    private final Proxy proxy;
    private final WorkerCalls calls;
    private final RouterMetrics metrics;
    private final ControlClient client;
    private final Duration stageTimeout;
    private final RoutingInput input;
    private final KvPlacement kv;
    /** What the stages send as authorization; null for none. */
    private final String stageAuthorization;

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
        return (front, request, path, admission) -> {
            RoutingRequest routing = input.read(front, request, true);
            if (routing == null) {
                admission.run();
                return;
            }
            String target = path.rawQuery().isEmpty() ? workerPath : workerPath + "?" + path.rawQuery();
            Runnable stages = twoStage
                    ? () -> twoStage(front, request, route, target, routing, admission)
                    : () -> bootstrap(front, request, route, target, routing, admission);
            if (kv == null || !policies.prefillPolicy().usesPrefixResidency()) {
                stages.run();
                return;
            }
            kv.residency(front.context().channel().eventLoop(), route, request, routing.model(), WorkerRole.PREFILL)
                    .thenAccept(prefix -> {
                        routing.withPrefix(prefix);
                        stages.run();
                    });
        };
    }

    /** The proxy fallback in PD mode: POST only, through the mode's pipeline on the same path. */
    void fallback(FrontendHandler front, FullHttpRequest request, RequestPath path, RoutingRequest routing) {
        if (!request.method().equals(HttpMethod.POST)) {
            request.release();
            front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.METHOD_NOT_ALLOWED,
                    "Only POST requests are supported for transparent proxy"));
            return;
        }
        String problem = JsonBodyCheck.problem(request.content(), true);
        if (problem != null) {
            request.release();
            front.respond(Responses.jsonError(front.context().alloc(), HttpResponseStatus.BAD_REQUEST, problem));
            return;
        }
        if (vllmMode) {
            twoStage(front, request, "fallback", path.rawTarget(), routing, () -> {});
        } else {
            bootstrap(front, request, "fallback", path.rawTarget(), routing, () -> {});
        }
    }

    private record Pair(Worker prefill, Worker decode) {}

    private Pair select(RoutingRequest routing) {
        String model = routing.model();
        LoadBalancingPolicy prefillPolicy = policies.prefillPolicy();
        LoadBalancingPolicy decodePolicy = policies.decodePolicy();
        List<Worker> prefills = workers.candidates(model, WorkerRole.PREFILL);
        List<Worker> decodes = workers.candidates(model, WorkerRole.DECODE);
        if (prefills.isEmpty() || decodes.isEmpty()) {
            return null;
        }
        Worker prefill = prefillPolicy.select(prefills, routing);
        // The residency found is the prefill workers': a decode worker gets the prompt's KV from the prefill.
        Worker decode = prefill == null ? null
                : decodePolicy.select(decodes, routing.withPrefix(PrefixResidency.UNKNOWN));
        if (prefill == null || decode == null) {
            return null;
        }
        calls.selected(prefillPolicy, prefill);
        calls.selected(decodePolicy, decode);
        return new Pair(prefill, decode);
    }

    /** The (prefill, decode) pair for a PD request, counted in the metrics; null once the client has its 503. */
    private Pair selectAndCount(FrontendHandler front, FullHttpRequest request, String route,
                                RoutingRequest routing, Runnable admissionRelease) {
        Pair pair = select(routing);
        if (pair == null) {
            noWorkers(front, request, admissionRelease);
            return null;
        }
        metrics.pdRequest(route, pair.prefill.shownUrl(), pair.decode.shownUrl());
        return pair;
    }

    private void twoStage(FrontendHandler front, FullHttpRequest request, String route, String target,
                          RoutingRequest routing, Runnable admissionRelease) {
        long start = System.nanoTime();
        Pair pair = selectAndCount(front, request, route, routing, admissionRelease);
        if (pair == null) {
            return;
        }
        String requestId = "___prefill_addr_" + hostPort(pair.prefill) + "___decode_addr_" + hostPort(pair.decode) + "_"
                + UUID.randomUUID().toString().replace("-", "");
        ObjectNode original;
        byte[] prefillBody;
        try {
            original = PdBodies.parseObject(ByteBufUtil.getBytes(request.content()));
            prefillBody = PdBodies.prefillBody(original.deepCopy(), route.equals("/inference/v1/generate"));
        } catch (IOException e) {
            request.release();
            admissionRelease.run();
            front.respond(Responses.jsonError(front.context().alloc(), HttpResponseStatus.BAD_REQUEST,
                    "Invalid JSON body: " + e.getMessage()));
            return;
        }
        HttpHeaders stageHeaders = stageHeaders(requestId);
        EventLoop loop = front.context().channel().eventLoop();
        Worker prefill = pair.prefill;
        calls.started(prefill);
        CompletableFuture<ControlClient.Reply> prefillCall = client.send(loop, HttpMethod.POST,
                prefill.baseUrl(), target, withRank(stageHeaders, prefill), prefillBody, stageTimeout);
        front.setExchange(new FrontendHandler.Exchange() {
            @Override
            public void onClientGone() {
                prefillCall.cancel(false);
            }

            @Override
            public void onClientWritable() {
            }
        });
        prefillCall.whenComplete((reply, error) -> loop.execute(() -> {
            stageEnded(prefill, policies.prefillPolicy(), prefillCall, reply, error);
            if (prefillCall.isCancelled()) {
                request.release();
                admissionRelease.run();
                return;
            }
            // The pipeline goes on only with a 2xx JSON answer, whatever the circuit made of it.
            boolean ok = error == null && reply.ok();
            JsonNode prefillAnswer = ok ? PdBodies.answerObject(reply.body()) : null;
            if (!ok || prefillAnswer == null) {
                String detail = error != null ? "prefill request failed: " + error.getMessage()
                        : !reply.ok() ? "prefill worker returned HTTP " + reply.status()
                        : "prefill response is not JSON";
                metrics.pdPrefillFailed(prefill.shownUrl(), "prefill_error");
                request.release();
                admissionRelease.run();
                front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.INTERNAL_SERVER_ERROR,
                        "Request processing failed: " + detail));
                return;
            }
            if (!front.isActive()) {
                request.release();
                admissionRelease.run();
                return;
            }
            JsonNode kv = prefillAnswer.get("kv_transfer_params");
            ByteBuf decodeBody = kv == null || kv.isNull() ? request.content().retain()
                    : PdBodies.splice(request.content(), "\"kv_transfer_params\":" + kv);
            if (LogprobsMerge.requested(original)) {
                request.release();
                decodeAndMerge(front, route, target, pair.decode, withRank(stageHeaders, pair.decode), decodeBody,
                        prefillAnswer, original.path("echo").asBoolean(false), admissionRelease, start);
            } else {
                decode(front, request, route, target, pair.decode, withRank(stageHeaders, pair.decode), decodeBody,
                        admissionRelease, start);
            }
        }));
    }

    private void bootstrap(FrontendHandler front, FullHttpRequest request, String route, String target,
                           RoutingRequest routing, Runnable admissionRelease) {
        long start = System.nanoTime();
        Pair pair = selectAndCount(front, request, route, routing, admissionRelease);
        if (pair == null) {
            return;
        }
        String fields = PdBodies.bootstrapFields(URI.create(pair.prefill.baseUrl()).getHost(),
                pair.prefill.bootstrapPort(), PdBodies.batchSize(request.content()));
        EventLoop loop = front.context().channel().eventLoop();
        Worker prefill = pair.prefill;
        HttpHeaders headers = Hop.forwardable(request.headers(), true);
        ByteBuf prefillBody = PdBodies.splice(request.content(), fields);
        byte[] prefillBytes = ByteBufUtil.getBytes(prefillBody);
        prefillBody.release();
        calls.started(prefill);
        // The prefill answer is not needed (no logprob merge); it is read and dropped in the background.
        CompletableFuture<ControlClient.Reply> prefillCall = client.send(loop, HttpMethod.POST,
                prefill.baseUrl(), target, withRank(headers, prefill), prefillBytes, stageTimeout);
        prefillCall.whenComplete((reply, error) -> {
            stageEnded(prefill, policies.prefillPolicy(), prefillCall, reply, error);
            if (error != null || !reply.ok()) {
                metrics.pdPrefillFailed(prefill.shownUrl(), "prefill_error");
                LOG.warning("Prefill request to " + prefill.shownUrl() + " failed: "
                        + (error != null ? error.getMessage() : "HTTP " + reply.status()));
            }
        });
        decode(front, request, route, target, pair.decode, withRank(headers, pair.decode),
                PdBodies.splice(request.content(), fields), admissionRelease, start);
    }

    /**
     * Accounts the end of a stage sent over a one-shot connection as the proxy accounts its own calls; returns
     * whether the call counts as success. A cancelled call (the client left) records no circuit-breaker outcome,
     * as in the proxy.
     */
    private boolean stageEnded(Worker worker, LoadBalancingPolicy policy, CompletableFuture<ControlClient.Reply> call,
                               ControlClient.Reply reply, Throwable error) {
        boolean success;
        if (call.isCancelled()) {
            success = false;
        } else if (error != null) {
            calls.unanswered(worker);
            success = false;
        } else {
            success = calls.answered(worker, reply.status());
        }
        calls.ended(worker, policy, success);
        return success;
    }

    /** The decode stage relayed part by part through the proxy. Takes ownership of {@code request} and {@code body}. */
    private void decode(FrontendHandler front, FullHttpRequest request, String route, String target, Worker decode,
                        HttpHeaders headers, ByteBuf body, Runnable admissionRelease, long start) {
        FullHttpRequest decodeRequest = request.replace(body);
        request.release();
        proxy.start(front, new ProxiedRequest(route, decodeRequest, target, headers)
                .sentTo(decode, policies.decodePolicy())
                .admission(admissionRelease)
                .onCompletion((status, success) -> decodeEnded(route, decode, start, success)));
    }

    /** The end of a decode stage, however it was sent. */
    private void decodeEnded(String route, Worker decode, long start, boolean success) {
        metrics.pdDuration(route, (System.nanoTime() - start) / 1e9);
        if (!success) {
            metrics.pdDecodeFailed(decode.shownUrl());
        }
    }

    /**
     * The decode stage when the client asked for logprobs without streaming: the whole decode answer is needed to
     * merge the prefill's prompt logprobs into it, so it is read in full over a one-shot connection instead of being
     * relayed part by part. Takes ownership of {@code body}.
     */
    private void decodeAndMerge(FrontendHandler front, String route, String target, Worker decode, HttpHeaders headers,
                                ByteBuf body, JsonNode prefillAnswer, boolean echo, Runnable admissionRelease,
                                long start) {
        byte[] bytes = ByteBufUtil.getBytes(body);
        body.release();
        EventLoop loop = front.context().channel().eventLoop();
        calls.started(decode);
        CompletableFuture<ControlClient.Reply> decodeCall = client.send(loop, HttpMethod.POST,
                decode.baseUrl(), target, headers, bytes, stageTimeout);
        front.setExchange(new FrontendHandler.Exchange() {
            @Override
            public void onClientGone() {
                decodeCall.cancel(false);
            }

            @Override
            public void onClientWritable() {
            }
        });
        decodeCall.whenComplete((reply, error) -> loop.execute(() -> {
            boolean success = stageEnded(decode, policies.decodePolicy(), decodeCall, reply, error);
            admissionRelease.run();
            decodeEnded(route, decode, start, success);
            double seconds = (System.nanoTime() - start) / 1e9;
            if (decodeCall.isCancelled()) {
                metrics.requestEnded(route, 499, false, seconds);
                return;
            }
            if (error != null) {
                metrics.requestEnded(route, 500, false, seconds);
                front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.INTERNAL_SERVER_ERROR,
                        "Request failed: " + error.getMessage()));
                return;
            }
            ObjectNode answer = reply.ok() ? PdBodies.answerObject(reply.body()) : null;
            if (answer == null) {
                // An error answer (or one that is not a JSON object) has nothing to merge into: relayed as it came.
                metrics.requestEnded(route, reply.status(), false, seconds);
                front.respond(relayed(front, reply.status(), reply.headers(), reply.body()));
                return;
            }
            metrics.requestEnded(route, reply.status(), true, seconds);
            LogprobsMerge.into(answer, prefillAnswer, echo);
            front.respond(relayed(front, reply.status(), reply.headers(), PdBodies.bytes(answer)));
        }));
    }

    /** The decode worker's answer with a new body: its headers minus framing and connection ones. */
    private static FullHttpResponse relayed(FrontendHandler front, int status, HttpHeaders workerHeaders, byte[] body) {
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                front.context().alloc().buffer(body.length).writeBytes(body));
        response.headers().set(workerHeaders);
        for (CharSequence name : Hop.RESPONSE_HOP_HEADERS) {
            response.headers().remove(name);
        }
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        return response;
    }

    private void noWorkers(FrontendHandler front, FullHttpRequest request, Runnable admissionRelease) {
        request.release();
        admissionRelease.run();
        front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
                ProxiedRequest.NO_AVAILABLE_WORKERS));
    }

    private HttpHeaders stageHeaders(String requestId) {
        HttpHeaders headers = new DefaultHttpHeaders();
        headers.set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        headers.set("X-Request-Id", requestId);
        if (stageAuthorization != null) {
            headers.set(HttpHeaderNames.AUTHORIZATION, stageAuthorization);
        }
        return headers;
    }

    private static HttpHeaders withRank(HttpHeaders headers, Worker worker) {
        HttpHeaders copy = headers.copy();
        if (worker.dpRank() >= 0) {
            copy.set(Hop.DP_RANK_HEADER, worker.dpRank());
        }
        return copy;
    }

    private static String hostPort(Worker worker) {
        WorkerAddress address = WorkerAddress.of(worker.baseUrl());
        return address.host() + ":" + address.port();
    }
}
