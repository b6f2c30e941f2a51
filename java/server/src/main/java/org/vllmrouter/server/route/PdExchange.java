package org.vllmrouter.server.route;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBufUtil;
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
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.logging.Logger;
import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.policy.PrefixResidency;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.server.http.FrontendHandler;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.Responses;
import org.vllmrouter.server.proxy.ExchangeEnd;
import org.vllmrouter.server.proxy.Hop;
import org.vllmrouter.server.proxy.LogprobsMerge;
import org.vllmrouter.server.proxy.ProxiedRequest;
import org.vllmrouter.server.proxy.WorkerAddress;
import org.vllmrouter.server.trace.RequestSpan;
import org.vllmrouter.server.trace.WorkerCallSpan;
import org.vllmrouter.server.worker.ControlClient;

/**
 * One PD request, from its (prefill, decode) pair to its answer. Its {@link ExchangeEnd} gives back the client's
 * request, the admission token and the request metrics once, whichever stage the request ends in; a decode stage
 * relayed by the proxy takes them over. The prefill stage, and a decode read in full to merge logprobs, are one-shot
 * calls that a client that leaves cancels. Runs on the client's event loop.
 */
final class PdExchange implements FrontendHandler.Exchange {
    private static final Logger LOG = Logger.getLogger(PdExchange.class.getName());

    private final PdRoutes pd;
    private final Reply reply;
    private final String route;
    private final String target;
    private final RoutingRequest routing;
    private final ExchangeEnd end;
    /** The one-shot stage call under way, which a client that leaves cancels. */
    private CompletableFuture<ControlClient.Reply> call;

    private record Pair(Worker prefill, Worker decode) {}

    /** Takes over {@code reply}, which holds the client's request, and the admission token {@code admission}. */
    PdExchange(PdRoutes pd, Reply reply, String route, String target, RoutingRequest routing, Runnable admission) {
        this.pd = pd;
        this.reply = reply;
        this.route = route;
        this.target = target;
        this.routing = routing;
        this.end = new ExchangeEnd(reply, route, admission, pd.metrics);
    }

    /**
     * {@code twoStage}: vLLM's prefill then decode; otherwise SGLang's bootstrap, both at once. Either way the pair
     * is counted in the metrics once chosen.
     */
    void start(boolean twoStage) {
        reply.span().routed(routing.model(), routing.sessionId(),
                pd.policies.prefillPolicy().name() + "/" + pd.policies.decodePolicy().name());
        Pair pair = select();
        if (pair == null) {
            failBeforeDecode(Responses.text(reply.alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
                    ProxiedRequest.NO_AVAILABLE_WORKERS));
            return;
        }
        pd.metrics.pdRequest(route, pair.prefill.shownUrl(), pair.decode.shownUrl());
        if (twoStage) {
            prefill(pair);
        } else {
            bootstrap(pair);
        }
    }

    @Override
    public void onClientGone() {
        if (call != null) {
            call.cancel(false);
        }
    }

    @Override
    public void onClientWritable() {
    }

    private Pair select() {
        String model = routing.model();
        LoadBalancingPolicy prefillPolicy = pd.policies.prefillPolicy();
        LoadBalancingPolicy decodePolicy = pd.policies.decodePolicy();
        List<Worker> prefills = pd.workers.candidates(model, WorkerRole.PREFILL);
        List<Worker> decodes = pd.workers.candidates(model, WorkerRole.DECODE);
        if (prefills.isEmpty() || decodes.isEmpty()) {
            return null;
        }
        Worker prefill = prefillPolicy.select(prefills, routing);
        // The residency found is the prefill workers': a decode worker gets the prompt's KV from the prefill.
        Worker decode = prefill == null ? null
                : decodePolicy.select(decodes, routing.withPrefix(PrefixResidency.UNKNOWN));
        if (prefill == null || decode == null) {
            if (prefill != null) {
                // No call will be made: the prompt placed on the prefill worker waits there no more.
                prefillPolicy.answerStarted(prefill, routing);
            }
            return null;
        }
        pd.calls.selected(prefillPolicy, prefill);
        pd.calls.selected(decodePolicy, decode);
        return new Pair(prefill, decode);
    }

    /** vLLM's first stage: the prefill's answer holds the {@code kv_transfer_params} the decode needs. */
    private void prefill(Pair pair) {
        String requestId = "___prefill_addr_" + hostPort(pair.prefill) + "___decode_addr_" + hostPort(pair.decode) + "_"
                + UUID.randomUUID().toString().replace("-", "");
        ObjectNode original;
        byte[] prefillBody;
        try {
            original = PdBodies.parseObject(ByteBufUtil.getBytes(reply.request().content()));
            prefillBody = PdBodies.prefillBody(original.deepCopy(), route.equals("/inference/v1/generate"));
        } catch (IOException e) {
            pd.policies.prefillPolicy().answerStarted(pair.prefill, routing);
            failBeforeDecode(Responses.jsonError(reply.alloc(), HttpResponseStatus.BAD_REQUEST,
                    "Invalid JSON body: " + e.getMessage()));
            return;
        }
        HttpHeaders stageHeaders = stageHeaders(requestId);
        Worker prefill = pair.prefill;
        pd.calls.started(prefill);
        HttpHeaders prefillHeaders = withRank(stageHeaders, prefill);
        WorkerCallSpan prefillSpan = stageSpan("prefill", prefill, prefillHeaders);
        CompletableFuture<ControlClient.Reply> prefillCall = pd.client.send(reply.loop(), HttpMethod.POST,
                prefill.baseUrl(), target, prefillHeaders, prefillBody, pd.stageTimeout);
        call = prefillCall;
        reply.front().setExchange(this);
        prefillCall.whenComplete((answer, error) -> reply.loop().execute(() -> {
            endStageSpan(prefillSpan, answer, error);
            prefilled(pair, prefillCall, answer, error, original, stageHeaders);
        }));
    }

    private void prefilled(Pair pair, CompletableFuture<ControlClient.Reply> prefillCall, ControlClient.Reply answer,
                           Throwable error, ObjectNode original, HttpHeaders stageHeaders) {
        Worker prefill = pair.prefill;
        stageEnded(prefill, pd.policies.prefillPolicy(), prefillCall, answer, error);
        if (prefillCall.isCancelled()) {
            end.endUncounted();
            return;
        }
        // The pipeline goes on only with a 2xx JSON answer, whatever the circuit made of it.
        boolean ok = error == null && answer.ok();
        JsonNode prefillAnswer = ok ? PdBodies.answerObject(answer.body()) : null;
        if (!ok || prefillAnswer == null) {
            String detail = error != null ? "prefill request failed: " + error.getMessage()
                    : !answer.ok() ? "prefill worker returned HTTP " + answer.status()
                    : "prefill response is not JSON";
            pd.metrics.pdPrefillFailed(prefill.shownUrl(), "prefill_error");
            failBeforeDecode(Responses.text(reply.alloc(), HttpResponseStatus.INTERNAL_SERVER_ERROR,
                    "Request processing failed: " + detail));
            return;
        }
        if (!reply.clientActive()) {
            end.endUncounted();
            return;
        }
        JsonNode kv = prefillAnswer.get("kv_transfer_params");
        String kvField = kv == null || kv.isNull() ? null : "\"kv_transfer_params\":" + kv;
        HttpHeaders headers = withRank(stageHeaders, pair.decode);
        if (LogprobsMerge.requested(original)) {
            FullHttpRequest request = reply.request();
            byte[] decodeBody = kvField == null ? ByteBufUtil.getBytes(request.content())
                    : PdBodies.spliceBytes(request.content(), kvField);
            decodeAndMerge(pair.decode, headers, decodeBody, prefillAnswer, original.path("echo").asBoolean(false));
        } else {
            if (kvField != null) {
                reply.replaceBody(PdBodies.splice(reply.request().content(), kvField));
            }
            decode(pair.decode, headers);
        }
    }

    /** SGLang's mode: the prefill and the decode get the request at once, with the same bootstrap fields. */
    private void bootstrap(Pair pair) {
        FullHttpRequest request = reply.request();
        String fields = PdBodies.bootstrapFields(URI.create(pair.prefill.baseUrl()).getHost(),
                pair.prefill.bootstrapPort(), PdBodies.batchSize(request.content()));
        Worker prefill = pair.prefill;
        HttpHeaders headers = Hop.forwardable(request.headers(), true);
        byte[] prefillBytes = PdBodies.spliceBytes(request.content(), fields);
        pd.calls.started(prefill);
        HttpHeaders prefillHeaders = withRank(headers, prefill);
        WorkerCallSpan prefillSpan = stageSpan("prefill", prefill, prefillHeaders);
        // The prefill answer is not needed (no logprob merge); it is read and dropped in the background.
        CompletableFuture<ControlClient.Reply> prefillCall = pd.client.send(reply.loop(), HttpMethod.POST,
                prefill.baseUrl(), target, prefillHeaders, prefillBytes, pd.stageTimeout);
        prefillCall.whenComplete((answer, error) -> {
            endStageSpan(prefillSpan, answer, error);
            stageEnded(prefill, pd.policies.prefillPolicy(), prefillCall, answer, error);
            if (error != null || !answer.ok()) {
                pd.metrics.pdPrefillFailed(prefill.shownUrl(), "prefill_error");
                LOG.warning("Prefill request to " + prefill.shownUrl() + " failed: "
                        + (error != null ? error.getMessage() : "HTTP " + answer.status()));
            }
        });
        reply.replaceBody(PdBodies.splice(request.content(), fields));
        decode(pair.decode, withRank(headers, pair.decode));
    }

    /**
     * Accounts the end of a stage sent over a one-shot connection as the proxy accounts its own calls; returns
     * whether the call counts as success. A cancelled call (the client left) records no circuit-breaker outcome,
     * as in the proxy.
     */
    private boolean stageEnded(Worker worker, LoadBalancingPolicy policy, CompletableFuture<ControlClient.Reply> stage,
                               ControlClient.Reply answer, Throwable error) {
        boolean success;
        if (stage.isCancelled()) {
            success = false;
        } else if (error != null) {
            pd.calls.unanswered(worker);
            success = false;
        } else {
            success = pd.calls.answered(worker, answer.status());
        }
        // A one-shot stage answers all at once: its prompt has been computed by the time the call ends.
        policy.answerStarted(worker, routing);
        pd.calls.ended(worker, policy, success);
        return success;
    }

    /** The decode stage relayed part by part through the proxy, which takes the request and the token over. */
    private void decode(Worker decode, HttpHeaders headers) {
        long start = end.startNanos();
        pd.proxy.start(reply, new ProxiedRequest(route, target, headers)
                .sentTo(decode, pd.policies.decodePolicy())
                .stage("decode")
                .admission(end.handOff())
                .onCompletion((status, success) -> decodeEnded(decode, start, success)));
    }

    /** The client span of a stage sent over a one-shot connection; its context goes into {@code headers}. */
    private WorkerCallSpan stageSpan(String stage, Worker worker, HttpHeaders headers) {
        RequestSpan span = reply.span();
        span.worker(worker.shownUrl(), 1);
        return span.workerCall(stage, worker.shownUrl(), HttpMethod.POST.name(), target, headers);
    }

    private static void endStageSpan(WorkerCallSpan span, ControlClient.Reply answer, Throwable error) {
        if (answer != null) {
            span.status(answer.status());
        }
        span.end(error);
    }

    /** The end of a decode stage, however it was sent. */
    private void decodeEnded(Worker decode, long start, boolean success) {
        pd.metrics.pdDuration(route, (System.nanoTime() - start) / 1e9);
        if (!success) {
            pd.metrics.pdDecodeFailed(decode.shownUrl());
        }
    }

    /**
     * The decode stage when the client asked for logprobs without streaming: the whole decode answer is needed to
     * merge the prefill's prompt logprobs into it, so it is read in full over a one-shot connection instead of being
     * relayed part by part. The client's request is given back at once: {@code body} is the decode's own copy.
     */
    private void decodeAndMerge(Worker decode, HttpHeaders headers, byte[] body, JsonNode prefillAnswer,
                                boolean echo) {
        reply.discard();
        pd.calls.started(decode);
        WorkerCallSpan decodeSpan = stageSpan("decode", decode, headers);
        CompletableFuture<ControlClient.Reply> decodeCall = pd.client.send(reply.loop(), HttpMethod.POST,
                decode.baseUrl(), target, headers, body, pd.stageTimeout);
        call = decodeCall;
        decodeCall.whenComplete((answer, error) -> reply.loop().execute(() -> {
            endStageSpan(decodeSpan, answer, error);
            decoded(decode, decodeCall, answer, error, prefillAnswer, echo);
        }));
    }

    private void decoded(Worker decode, CompletableFuture<ControlClient.Reply> decodeCall, ControlClient.Reply answer,
                         Throwable error, JsonNode prefillAnswer, boolean echo) {
        boolean success = stageEnded(decode, pd.policies.decodePolicy(), decodeCall, answer, error);
        decodeEnded(decode, end.startNanos(), success);
        if (decodeCall.isCancelled()) {
            end.end(499, false);
            return;
        }
        if (error != null) {
            end.end(500, false);
            reply.text(HttpResponseStatus.INTERNAL_SERVER_ERROR, "Request failed: " + error.getMessage());
            return;
        }
        ObjectNode merged = answer.ok() ? PdBodies.answerObject(answer.body()) : null;
        if (merged == null) {
            // An error answer (or one that is not a JSON object) has nothing to merge into: relayed as it came.
            end.end(answer.status(), false);
            reply.send(relayed(answer.status(), answer.headers(), answer.body()));
            return;
        }
        end.end(answer.status(), true);
        LogprobsMerge.into(merged, prefillAnswer, echo);
        reply.send(relayed(answer.status(), answer.headers(), PdBodies.bytes(merged)));
    }

    /** Answers a request whose decode stage never started; such a request has no line in the request metrics. */
    private void failBeforeDecode(FullHttpResponse response) {
        end.endUncounted();
        reply.send(response);
    }

    /** The decode worker's answer with a new body: its headers minus framing and connection ones. */
    private FullHttpResponse relayed(int status, HttpHeaders workerHeaders, byte[] body) {
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                reply.alloc().buffer(body.length).writeBytes(body));
        response.headers().set(workerHeaders);
        for (CharSequence name : Hop.RESPONSE_HOP_HEADERS) {
            response.headers().remove(name);
        }
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        return response;
    }

    private HttpHeaders stageHeaders(String requestId) {
        HttpHeaders headers = new DefaultHttpHeaders();
        headers.set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        headers.set("X-Request-Id", requestId);
        if (pd.stageAuthorization != null) {
            headers.set(HttpHeaderNames.AUTHORIZATION, pd.stageAuthorization);
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
