package org.vllmrouter.server.trace;

import io.netty.handler.codec.http.HttpRequest;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.vllmrouter.core.settings.TracingSettings;

/** Starts the span of each client request. {@link #OFF} starts none and costs a call returning a constant. */
public interface RequestTracer extends AutoCloseable {
    RequestTracer OFF = request -> RequestSpan.NONE;

    /** The span of {@code request}, or {@link RequestSpan#NONE} when it is not traced. Call on its event loop. */
    RequestSpan start(HttpRequest request);

    /** Sends what is queued, within a bounded wait, and stops the exporter. */
    @Override
    default void close() { }

    /** {@link #OFF} unless {@code settings} enable tracing; spans dropped by a full queue are counted in {@code registry}. */
    static RequestTracer of(TracingSettings settings, PrometheusRegistry registry) {
        return settings.enabled() ? OtelRequestTracer.create(settings, registry) : OFF;
    }
}
