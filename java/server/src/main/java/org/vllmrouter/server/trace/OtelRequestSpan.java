package org.vllmrouter.server.trace;

import io.netty.handler.codec.http.HttpHeaders;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapPropagator;
import java.net.URI;
import java.util.Map;

/**
 * A traced request's server span, and the client spans of its worker calls. Attribute names follow the OpenTelemetry
 * HTTP semantic conventions, {@code gen_ai.request.model} for the model and {@code session.id} for the session; what
 * is the router's own is under {@code vllm_router.}.
 */
final class OtelRequestSpan implements RequestSpan {
    static final AttributeKey<String> HTTP_METHOD = AttributeKey.stringKey("http.request.method");
    static final AttributeKey<String> HTTP_ROUTE = AttributeKey.stringKey("http.route");
    static final AttributeKey<Long> HTTP_STATUS = AttributeKey.longKey("http.response.status_code");
    static final AttributeKey<Long> REQUEST_SIZE = AttributeKey.longKey("http.request.body.size");
    static final AttributeKey<Long> RESPONSE_SIZE = AttributeKey.longKey("http.response.body.size");
    static final AttributeKey<String> URL_PATH = AttributeKey.stringKey("url.path");
    static final AttributeKey<String> URL_SCHEME = AttributeKey.stringKey("url.scheme");
    static final AttributeKey<String> URL_FULL = AttributeKey.stringKey("url.full");
    static final AttributeKey<String> SERVER_ADDRESS = AttributeKey.stringKey("server.address");
    static final AttributeKey<Long> SERVER_PORT = AttributeKey.longKey("server.port");
    static final AttributeKey<String> USER_AGENT = AttributeKey.stringKey("user_agent.original");
    static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
    static final AttributeKey<String> MODEL = AttributeKey.stringKey("gen_ai.request.model");
    static final AttributeKey<String> SESSION = AttributeKey.stringKey("session.id");
    static final AttributeKey<String> POLICY = AttributeKey.stringKey("vllm_router.policy");
    static final AttributeKey<String> WORKER = AttributeKey.stringKey("vllm_router.worker");
    static final AttributeKey<Long> RETRIES = AttributeKey.longKey("vllm_router.retries");
    static final AttributeKey<String> STAGE = AttributeKey.stringKey("vllm_router.stage");

    private final Tracer tracer;
    private final TextMapPropagator propagator;
    private final Span span;
    private final String method;
    private int status;
    private boolean ended;

    OtelRequestSpan(Tracer tracer, TextMapPropagator propagator, Span span, String method) {
        this.tracer = tracer;
        this.propagator = propagator;
        this.span = span;
        this.method = method;
    }

    @Override
    public void routed(String model, String sessionId, String policy) {
        if (model != null) {
            span.setAttribute(MODEL, model);
        }
        if (sessionId != null) {
            span.setAttribute(SESSION, sessionId);
        }
        if (policy != null) {
            span.setAttribute(POLICY, policy);
        }
    }

    @Override
    public void worker(String workerUrl, int attempt) {
        span.setAttribute(WORKER, workerUrl);
        span.setAttribute(RETRIES, attempt - 1L);
    }

    @Override
    public WorkerCallSpan workerCall(String stage, String workerUrl, String method, String target,
                                     HttpHeaders outgoing) {
        var builder = tracer.spanBuilder(method).setSpanKind(SpanKind.CLIENT)
                .setParent(Context.root().with(span))
                .setAttribute(STAGE, stage)
                .setAttribute(HTTP_METHOD, method)
                .setAttribute(URL_FULL, workerUrl + target);
        try {
            URI uri = URI.create(workerUrl);
            if (uri.getHost() != null) {
                builder.setAttribute(SERVER_ADDRESS, uri.getHost());
            }
            if (uri.getPort() > 0) {
                builder.setAttribute(SERVER_PORT, (long) uri.getPort());
            }
        } catch (IllegalArgumentException e) {
            // A worker URL the registry accepted but URI does not: the span keeps url.full alone.
        }
        Span call = builder.startSpan();
        propagator.inject(Context.root().with(call), outgoing, OtelRequestTracer.SETTER);
        return new OtelWorkerCallSpan(call);
    }

    @Override
    public void bytes(long requestBytes, long responseBytes) {
        span.setAttribute(REQUEST_SIZE, requestBytes);
        span.setAttribute(RESPONSE_SIZE, responseBytes);
    }

    @Override
    public void event(String name, Map<String, Object> attributes) {
        span.addEvent(name, OtelRequestTracer.attributes(attributes));
    }

    @Override
    public void status(int status) {
        this.status = status;
    }

    @Override
    public void end(String route) {
        if (ended) {
            return;
        }
        ended = true;
        if (route != null) {
            span.setAttribute(HTTP_ROUTE, route);
            span.updateName(method + " " + route);
        }
        if (status > 0) {
            span.setAttribute(HTTP_STATUS, (long) status);
            if (status >= 500) {
                span.setAttribute(ERROR_TYPE, Integer.toString(status));
                span.setStatus(StatusCode.ERROR);
            }
        } else {
            // No answer went out: the client left first.
            span.setAttribute(ERROR_TYPE, "client_closed");
            span.setStatus(StatusCode.ERROR);
        }
        span.end();
    }

    /** One worker call's client span. */
    private static final class OtelWorkerCallSpan implements WorkerCallSpan {
        private final Span span;
        private volatile int status;

        OtelWorkerCallSpan(Span span) {
            this.span = span;
        }

        @Override
        public void status(int status) {
            this.status = status;
            span.setAttribute(HTTP_STATUS, (long) status);
        }

        @Override
        public void end(Throwable failure) {
            if (failure != null) {
                span.setAttribute(ERROR_TYPE, failure.getClass().getName());
                span.setStatus(StatusCode.ERROR, String.valueOf(failure.getMessage()));
            } else if (status >= 500 || status == 0) {
                span.setAttribute(ERROR_TYPE, status == 0 ? "no_answer" : Integer.toString(status));
                span.setStatus(StatusCode.ERROR);
            }
            span.end();
        }
    }
}
