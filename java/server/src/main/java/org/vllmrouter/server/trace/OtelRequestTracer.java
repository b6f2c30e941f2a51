package org.vllmrouter.server.trace;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporterBuilder;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporter;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporterBuilder;
import io.opentelemetry.sdk.common.InternalTelemetryVersion;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.settings.TracingSettings;

/**
 * Spans through the OpenTelemetry SDK: W3C trace context taken from the client and written into each worker call,
 * sampled parent-based over a trace-id ratio, batched into a bounded queue that the exporter's own thread drains
 * over OTLP (gRPC or HTTP/protobuf). Ending a span only offers it to the queue: a full queue (a slow or dead
 * collector) drops the span, counted in {@code vllm_router_trace_spans_dropped_total}, and never holds an event loop.
 */
final class OtelRequestTracer implements RequestTracer {
    /** Spans waiting for export at most; with the batch size, the exporter's memory bound (docs/perf/tracing.md). */
    static final int MAX_QUEUE_SIZE = 2048;
    static final int MAX_EXPORT_BATCH_SIZE = 512;
    private static final long SCHEDULE_DELAY_MILLIS = 1000;
    private static final long EXPORT_TIMEOUT_MILLIS = 10_000;
    /** How long a stopping router waits for the last export. */
    private static final long SHUTDOWN_WAIT_MILLIS = 3000;
    private static final String SCOPE = "org.vllmrouter";

    static final TextMapGetter<HttpHeaders> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(HttpHeaders carrier) {
            return carrier.names();
        }

        @Override
        public String get(HttpHeaders carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };
    static final TextMapSetter<HttpHeaders> SETTER = (carrier, key, value) -> {
        if (carrier != null) {
            carrier.set(key, value);
        }
    };

    private final SdkTracerProvider provider;
    private final Tracer tracer;
    private final TextMapPropagator propagator = W3CTraceContextPropagator.getInstance();
    private final TracingSettings settings;

    private OtelRequestTracer(SdkTracerProvider provider, TracingSettings settings) {
        this.provider = provider;
        this.tracer = provider.get(SCOPE);
        this.settings = settings;
    }

    static OtelRequestTracer create(TracingSettings settings, PrometheusRegistry registry) {
        BatchSpanProcessor batches = BatchSpanProcessor.builder(exporter(settings))
                .setMaxQueueSize(MAX_QUEUE_SIZE)
                .setMaxExportBatchSize(MAX_EXPORT_BATCH_SIZE)
                .setScheduleDelay(SCHEDULE_DELAY_MILLIS, TimeUnit.MILLISECONDS)
                .setExporterTimeout(EXPORT_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS)
                .setInternalTelemetryVersion(InternalTelemetryVersion.LEGACY)
                .setMeterProvider(new DroppedSpans(registry))
                .build();
        SdkTracerProvider provider = SdkTracerProvider.builder()
                .setResource(Resource.getDefault().merge(Resource.create(
                        Attributes.of(AttributeKey.stringKey("service.name"), settings.serviceName()))))
                .setSampler(Sampler.parentBased(Sampler.traceIdRatioBased(settings.samplingRatio())))
                .addSpanProcessor(batches)
                .build();
        return new OtelRequestTracer(provider, settings);
    }

    private static SpanExporter exporter(TracingSettings settings) {
        if (settings.protocol() == TracingSettings.Protocol.GRPC) {
            OtlpGrpcSpanExporterBuilder grpc = OtlpGrpcSpanExporter.builder().setEndpoint(settings.endpoint())
                    .setTimeout(EXPORT_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            settings.headers().forEach(grpc::addHeader);
            return grpc.build();
        }
        OtlpHttpSpanExporterBuilder http = OtlpHttpSpanExporter.builder().setEndpoint(settings.endpoint())
                .setTimeout(EXPORT_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        settings.headers().forEach(http::addHeader);
        return http.build();
    }

    @Override
    public RequestSpan start(HttpRequest request) {
        String uri = request.uri();
        int query = uri.indexOf('?');
        String path = query < 0 ? uri : uri.substring(0, query);
        if (!settings.traces(path)) {
            return RequestSpan.NONE;
        }
        // A malformed traceparent extracts as no parent: the request starts a trace of its own (W3C rules).
        Context parent = propagator.extract(Context.root(), request.headers(), GETTER);
        String method = request.method().name();
        Span span = tracer.spanBuilder(method).setSpanKind(SpanKind.SERVER).setParent(parent)
                .setAttribute(OtelRequestSpan.HTTP_METHOD, method)
                .setAttribute(OtelRequestSpan.URL_PATH, path)
                .setAttribute(OtelRequestSpan.URL_SCHEME, "http")
                .startSpan();
        String host = request.headers().get(HttpHeaderNames.HOST);
        if (host != null) {
            int colon = host.lastIndexOf(':');
            span.setAttribute(OtelRequestSpan.SERVER_ADDRESS, colon > 0 && !host.endsWith("]")
                    ? host.substring(0, colon) : host);
        }
        String agent = request.headers().get(HttpHeaderNames.USER_AGENT);
        if (agent != null) {
            span.setAttribute(OtelRequestSpan.USER_AGENT, agent);
        }
        return new OtelRequestSpan(tracer, propagator, span, method);
    }

    @Override
    public void close() {
        provider.shutdown().join(SHUTDOWN_WAIT_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** Attribute values as the span API takes them. */
    static Attributes attributes(Map<String, Object> values) {
        var builder = Attributes.builder();
        values.forEach((name, value) -> {
            if (value instanceof Number n && !(value instanceof Double || value instanceof Float)) {
                builder.put(name, n.longValue());
            } else if (value instanceof Number n) {
                builder.put(name, n.doubleValue());
            } else if (value != null) {
                builder.put(name, value.toString());
            }
        });
        return builder.build();
    }
}
