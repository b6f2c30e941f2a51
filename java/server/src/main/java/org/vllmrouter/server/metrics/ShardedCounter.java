package org.vllmrouter.server.metrics;

import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A Prometheus counter for the per-request path, counted in {@link ThreadCells} and scraped through the client's
 * {@code CounterWithCallback}, so it reads as the client's {@code Counter} with the same name, help and labels does.
 * Label sets are never removed.
 */
final class ShardedCounter {
    /** One label set's count. */
    static final class Point {
        private final ThreadCells cells = new ThreadCells(1);

        void inc() {
            cells.add(ThreadSlots.current(), 0, 1);
        }

        void add(long n) {
            cells.add(ThreadSlots.current(), 0, n);
        }

        long value() {
            return cells.sum(0);
        }
    }

    /** The name without its {@code _total} suffix, as Prometheus names the family. */
    private final String name;
    private final int labelCount;
    private final ConcurrentHashMap<List<String>, Point> points = new ConcurrentHashMap<>();

    /** Registers the counter in {@code registry}; {@code name} with its {@code _total} suffix, as the client takes it. */
    ShardedCounter(PrometheusRegistry registry, String name, String help, String... labelNames) {
        this.labelCount = labelNames.length;
        this.name = CounterWithCallback.builder().name(name).help(help).labelNames(labelNames)
                .callback(cb -> points.forEach((values, point) -> cb.call(point.value(), values.toArray(String[]::new))))
                .register(registry)
                .getPrometheusName();
    }

    /** The point of one label set, made on first use; callers on the hot path keep it. */
    Point labelValues(String... values) {
        if (values.length != labelCount) {
            throw new IllegalArgumentException(name + " takes " + labelCount + " label values, got " + values.length);
        }
        return points.computeIfAbsent(List.of(values), v -> new Point());
    }
}
