package org.vllmrouter.server.metrics;

import io.prometheus.metrics.model.registry.Collector;
import io.prometheus.metrics.model.registry.MetricType;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A Prometheus counter for the per-request path, counted in {@link ThreadCells}; it scrapes as the client's
 * {@code Counter} with the same name, help and labels does. Label sets are never removed.
 */
final class ShardedCounter implements Collector {
    /** One label set's count. */
    static final class Point {
        private final ThreadCells cells = new ThreadCells(1);

        void inc() {
            cells.add(ThreadSlots.current(), 0, 1);
        }

        long value() {
            return cells.sum(0);
        }
    }

    private final String name;
    private final String help;
    private final String[] labelNames;
    private final ConcurrentHashMap<List<String>, Point> points = new ConcurrentHashMap<>();

    /** {@code name} with its {@code _total} suffix, as the client's counter builder takes it. */
    ShardedCounter(String name, String help, String... labelNames) {
        this.name = name.endsWith("_total") ? name.substring(0, name.length() - "_total".length()) : name;
        this.help = help;
        this.labelNames = labelNames.clone();
    }

    /** The point of one label set, made on first use; callers on the hot path keep it. */
    Point labelValues(String... values) {
        if (values.length != labelNames.length) {
            throw new IllegalArgumentException(name + " takes " + labelNames.length + " label values, got " + values.length);
        }
        return points.computeIfAbsent(List.of(values), v -> new Point());
    }

    @Override
    public MetricSnapshot collect() {
        CounterSnapshot.Builder snapshot = CounterSnapshot.builder().name(name).help(help);
        points.forEach((values, point) -> snapshot.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder()
                .labels(Labels.of(labelNames, values.toArray(String[]::new)))
                .value(point.value())
                .build()));
        return snapshot.build();
    }

    @Override
    public String getPrometheusName() {
        return name;
    }

    @Override
    public MetricType getMetricType() {
        return MetricType.COUNTER;
    }

    @Override
    public Set<String> getLabelNames() {
        return Set.of(labelNames);
    }
}
