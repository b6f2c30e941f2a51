package org.vllmrouter.server.metrics;

import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.model.registry.Collector;
import io.prometheus.metrics.model.registry.MetricType;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * A classic Prometheus histogram for the per-request path, counted in {@link ThreadCells}; it scrapes as the
 * client's {@code Histogram} (classic buckets only, no exemplars) with the same name, help, bounds and labels does.
 * Metrics that are sums of its points (a total over every label set, a count of observations) are views of it
 * ({@link #sumOf}, {@link #countOf}), read at scrape time, so a request writes once for all of them. Label sets are
 * never removed.
 */
final class ShardedHistogram implements Collector {
    /** One label set's observations: a count per bucket and their sum. */
    final class Point {
        private final ThreadCells cells = new ThreadCells(bounds.length + 2);

        void observe(double value) {
            int slot = ThreadSlots.current();
            cells.add(slot, bucket(value), 1);
            cells.addDouble(slot, bounds.length + 1, value);
        }

        /** Observations per bucket, not cumulative; the last bucket is above the highest bound. */
        long[] counts() {
            long[] counts = new long[bounds.length + 1];
            for (int i = 0; i < counts.length; i++) {
                counts[i] = cells.sum(i);
            }
            return counts;
        }

        double sum() {
            return cells.sumDouble(bounds.length + 1);
        }
    }

    private final String name;
    private final String help;
    private final String[] labelNames;
    /** Upper bounds, ascending. */
    private final double[] bounds;
    /** The bounds and +Inf, as a snapshot lists its buckets. */
    private final double[] snapshotBounds;
    private final ConcurrentHashMap<List<String>, Point> points = new ConcurrentHashMap<>();

    ShardedHistogram(String name, String help, double[] bounds, String... labelNames) {
        this.name = name;
        this.help = help;
        this.bounds = bounds.clone();
        this.labelNames = labelNames.clone();
        this.snapshotBounds = Arrays.copyOf(bounds, bounds.length + 1);
        snapshotBounds[bounds.length] = Double.POSITIVE_INFINITY;
    }

    /** The point of one label set, made on first use; callers on the hot path keep it. */
    Point labelValues(String... values) {
        if (values.length != labelNames.length) {
            throw new IllegalArgumentException(name + " takes " + labelNames.length + " label values, got " + values.length);
        }
        return points.computeIfAbsent(List.of(values), v -> new Point());
    }

    /** The first bucket whose upper bound is at least {@code value} (Prometheus's "le"). */
    private int bucket(double value) {
        int found = Arrays.binarySearch(bounds, value);
        return found >= 0 ? found : -found - 1;
    }

    /** Observations per bucket over the points {@code which} takes, as {@link Point#counts()}. */
    long[] counts(Predicate<List<String>> which) {
        long[] total = new long[bounds.length + 1];
        points.forEach((values, point) -> {
            if (which.test(values)) {
                long[] counts = point.counts();
                for (int i = 0; i < total.length; i++) {
                    total[i] += counts[i];
                }
            }
        });
        return total;
    }

    @Override
    public MetricSnapshot collect() {
        HistogramSnapshot.Builder snapshot = HistogramSnapshot.builder().name(name).help(help);
        points.forEach((values, point) -> snapshot.dataPoint(dataPoint(
                Labels.of(labelNames, values.toArray(String[]::new)), point.counts(), point.sum())));
        return snapshot.build();
    }

    private HistogramSnapshot.HistogramDataPointSnapshot dataPoint(Labels labels, long[] counts, double sum) {
        return HistogramSnapshot.HistogramDataPointSnapshot.builder()
                .labels(labels)
                .classicHistogramBuckets(ClassicHistogramBuckets.of(snapshotBounds, counts))
                .sum(sum)
                .build();
    }

    /** A histogram without labels: the sum of the points {@code which} takes (zero while there are none). */
    Collector sumOf(String sumName, String sumHelp, Predicate<List<String>> which) {
        return new Collector() {
            @Override
            public MetricSnapshot collect() {
                double sum = 0;
                for (var e : points.entrySet()) {
                    if (which.test(e.getKey())) {
                        sum += e.getValue().sum();
                    }
                }
                return HistogramSnapshot.builder().name(sumName).help(sumHelp)
                        .dataPoint(dataPoint(Labels.EMPTY, counts(which), sum)).build();
            }

            @Override
            public String getPrometheusName() {
                return sumName;
            }

            @Override
            public MetricType getMetricType() {
                return MetricType.HISTOGRAM;
            }
        };
    }

    /**
     * A counter of the observations of each point {@code which} takes, under the point's labels when
     * {@code keepLabels}, else summed into one unlabelled count (zero while there are none).
     */
    Collector countOf(String counterName, String counterHelp, boolean keepLabels, Predicate<List<String>> which) {
        return CounterWithCallback.builder().name(counterName).help(counterHelp)
                .labelNames(keepLabels ? labelNames : new String[0])
                .callback(cb -> {
                    long unlabelled = 0;
                    for (var e : points.entrySet()) {
                        if (which.test(e.getKey())) {
                            long count = Arrays.stream(e.getValue().counts()).sum();
                            if (keepLabels) {
                                cb.call(count, e.getKey().toArray(String[]::new));
                            } else {
                                unlabelled += count;
                            }
                        }
                    }
                    if (!keepLabels) {
                        cb.call(unlabelled);
                    }
                })
                .build();
    }

    @Override
    public String getPrometheusName() {
        return name;
    }

    @Override
    public MetricType getMetricType() {
        return MetricType.HISTOGRAM;
    }

    @Override
    public Set<String> getLabelNames() {
        return Set.of(labelNames);
    }
}
