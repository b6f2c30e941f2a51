package org.vllmrouter.server.trace;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.DoubleCounterBuilder;
import io.opentelemetry.api.metrics.DoubleGaugeBuilder;
import io.opentelemetry.api.metrics.DoubleHistogramBuilder;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.LongCounterBuilder;
import io.opentelemetry.api.metrics.LongUpDownCounterBuilder;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.MeterBuilder;
import io.opentelemetry.api.metrics.MeterProvider;
import io.opentelemetry.api.metrics.ObservableLongCounter;
import io.opentelemetry.api.metrics.ObservableLongMeasurement;
import io.opentelemetry.context.Context;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.function.Consumer;

/**
 * The batch span processor's own telemetry, narrowed to the one figure the router exposes: the spans it dropped
 * because its queue was full, as the Prometheus counter {@code vllm_router_trace_spans_dropped_total}. The processor
 * reports through the metrics API (its legacy {@value #PROCESSED} counter, {@code dropped=true} for a drop); this
 * provider takes that counter and gives every other instrument the no-op one, so the SDK's metrics module is not
 * needed.
 */
final class DroppedSpans implements MeterProvider {
    static final String PROCESSED = "processedSpans";
    private static final AttributeKey<Boolean> DROPPED = AttributeKey.booleanKey("dropped");

    private final Counter dropped;
    private final Meter noop = MeterProvider.noop().get("noop");

    DroppedSpans(PrometheusRegistry registry) {
        this.dropped = Counter.builder().name("vllm_router_trace_spans_dropped_total")
                .help("Spans dropped before export because the exporter's queue was full")
                .withoutExemplars().register(registry);
    }

    @Override
    public MeterBuilder meterBuilder(String scope) {
        return new MeterBuilder() {
            @Override
            public MeterBuilder setSchemaUrl(String url) {
                return this;
            }

            @Override
            public MeterBuilder setInstrumentationVersion(String version) {
                return this;
            }

            @Override
            public Meter build() {
                return meter;
            }
        };
    }

    private final Meter meter = new Meter() {
        @Override
        public LongCounterBuilder counterBuilder(String name) {
            return name.equals(PROCESSED) ? new DropCounterBuilder() : noop.counterBuilder(name);
        }

        @Override
        public LongUpDownCounterBuilder upDownCounterBuilder(String name) {
            return noop.upDownCounterBuilder(name);
        }

        @Override
        public DoubleHistogramBuilder histogramBuilder(String name) {
            return noop.histogramBuilder(name);
        }

        @Override
        public DoubleGaugeBuilder gaugeBuilder(String name) {
            return noop.gaugeBuilder(name);
        }
    };

    private final class DropCounterBuilder implements LongCounterBuilder {
        @Override
        public LongCounterBuilder setDescription(String description) {
            return this;
        }

        @Override
        public LongCounterBuilder setUnit(String unit) {
            return this;
        }

        @Override
        public DoubleCounterBuilder ofDoubles() {
            return noop.counterBuilder(PROCESSED).ofDoubles();
        }

        @Override
        public LongCounter build() {
            return new LongCounter() {
                @Override
                public void add(long value) {
                }

                @Override
                public void add(long value, Attributes attributes) {
                    if (Boolean.TRUE.equals(attributes.get(DROPPED))) {
                        dropped.inc(value);
                    }
                }

                @Override
                public void add(long value, Attributes attributes, Context context) {
                    add(value, attributes);
                }
            };
        }

        @Override
        public ObservableLongCounter buildWithCallback(Consumer<ObservableLongMeasurement> callback) {
            return noop.counterBuilder(PROCESSED).buildWithCallback(callback);
        }
    }
}
