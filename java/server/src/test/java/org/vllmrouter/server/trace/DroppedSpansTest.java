package org.vllmrouter.server.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.InternalTelemetryVersion;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import java.util.Collection;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The batch processor's drops, as the SDK reports them, reach the Prometheus counter. */
class DroppedSpansTest {

    @Test
    void spansEndedIntoAFullQueueAreCountedAsDropped() throws InterruptedException {
        PrometheusRegistry registry = new PrometheusRegistry();
        CountDownLatch exporting = new CountDownLatch(1);
        CompletableResultCode never = new CompletableResultCode();
        // An exporter that takes the first batch and never finishes it: the queue behind it fills.
        SpanExporter stuck = new SpanExporter() {
            @Override
            public CompletableResultCode export(Collection<SpanData> spans) {
                exporting.countDown();
                return never;
            }

            @Override
            public CompletableResultCode flush() {
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode shutdown() {
                return CompletableResultCode.ofSuccess();
            }
        };
        BatchSpanProcessor batches = BatchSpanProcessor.builder(stuck).setMaxQueueSize(4).setMaxExportBatchSize(1)
                .setScheduleDelay(1, TimeUnit.MILLISECONDS).setExporterTimeout(60, TimeUnit.SECONDS)
                .setInternalTelemetryVersion(InternalTelemetryVersion.LEGACY)
                .setMeterProvider(new DroppedSpans(registry)).build();
        SdkTracerProvider provider = SdkTracerProvider.builder().addSpanProcessor(batches).build();
        try {
            provider.get("test").spanBuilder("first").startSpan().end();
            exporting.await(10, TimeUnit.SECONDS);
            for (int i = 0; i < 10; i++) {
                provider.get("test").spanBuilder("queued " + i).startSpan().end();
            }
            assertEquals(6.0, dropped(registry), "4 queued behind the stuck export, 6 dropped");
        } finally {
            never.succeed();
            provider.shutdown().join(5, TimeUnit.SECONDS);
        }
    }

    private static double dropped(PrometheusRegistry registry) {
        return registry.scrape().stream().filter(s -> s.getMetadata().getName().equals("vllm_router_trace_spans_dropped"))
                .map(s -> ((CounterSnapshot) s).getDataPoints().get(0).getValue()).findFirst().orElse(-1.0);
    }
}
