package org.vllmrouter.server.metrics;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.vllmrouter.core.worker.Worker;

/**
 * The router's recent activity for the status page, derived only from counters it keeps anyway: the requests sent to
 * each worker ({@link Worker#processed()}), the histogram of successful request durations and the failure counter.
 * Nothing is recorded per request for it. Each {@link #read()} reads those cumulative counters and compares the
 * reading with one kept from an earlier call; it keeps at most one reading a second, for the last minute. The page's
 * own once-a-second poll is the sampling clock, so a router nobody watches does no work for this at all, and the
 * window starts filling when someone opens the page.
 */
public final class ActivityWindow {
    /** Requests per second are taken over about this span. */
    static final long RATE_SPAN_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Latency percentiles and request counts are taken over about this span. */
    static final long LATENCY_SPAN_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** Readings closer together than this are not kept: one a second is enough for a minute's window. */
    static final long KEEP_SPACING_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** A span shorter than this gives no rate: two polls a moment apart would make one request look like a burst. */
    static final long MIN_SPAN_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    /** The cumulative counters at one moment. {@code succeededByDuration} as {@link RouterMetrics#succeededByDuration()}. */
    record Counters(Map<String, Long> requestsByWorker, long[] succeededByDuration, long failed) {}

    private record Reading(long nanos, Counters counters) {}

    /**
     * What happened over the spans that end now. {@code rateSecs} is the span of the rates ({@code 0}: not enough
     * history yet, and then every rate is null); {@code latencySecs} that of the counts and percentiles, which are
     * null when no request succeeded in it. Percentiles are estimated from the histogram's buckets by linear
     * interpolation, as Prometheus' {@code histogram_quantile} does.
     */
    public record Activity(double rateSecs, Map<String, Double> requestsPerSecondByWorker, Double requestsPerSecond,
                           double latencySecs, long succeeded, long failed, Double p50Ms, Double p99Ms) {}

    private final Supplier<Counters> counters;
    private final LongSupplier nanoClock;
    private final double[] bucketBounds;
    private final ArrayDeque<Reading> kept = new ArrayDeque<>();

    ActivityWindow(Supplier<Counters> counters, LongSupplier nanoClock, double[] bucketBounds) {
        this.counters = counters;
        this.nanoClock = nanoClock;
        this.bucketBounds = bucketBounds;
    }

    /** The activity of the router that {@code metrics} and {@code workers} describe. */
    public static ActivityWindow of(RouterMetrics metrics, Supplier<List<Worker>> workers) {
        return new ActivityWindow(() -> {
            Map<String, Long> byWorker = new HashMap<>();
            for (Worker w : workers.get()) {
                byWorker.put(w.url(), w.processed());
            }
            return new Counters(byWorker, metrics.succeededByDuration(), metrics.failedRequests());
        }, System::nanoTime, RouterMetrics.durationBuckets());
    }

    public synchronized Activity read() {
        Reading now = new Reading(nanoClock.getAsLong(), counters.get());
        while (!kept.isEmpty() && now.nanos() - kept.peekFirst().nanos() > LATENCY_SPAN_NANOS + KEEP_SPACING_NANOS) {
            kept.pollFirst();
        }
        Reading rateBase = oldestWithin(now, RATE_SPAN_NANOS);
        Reading latencyBase = oldestWithin(now, LATENCY_SPAN_NANOS);
        if (kept.isEmpty() || now.nanos() - kept.peekLast().nanos() >= KEEP_SPACING_NANOS) {
            kept.addLast(now);
        }

        double rateSecs = 0;
        Map<String, Double> perWorker = new HashMap<>();
        Double total = null;
        if (rateBase != null) {
            rateSecs = seconds(now.nanos() - rateBase.nanos());
            for (Map.Entry<String, Long> e : now.counters().requestsByWorker().entrySet()) {
                // A worker added since the base reading started from zero.
                long before = rateBase.counters().requestsByWorker().getOrDefault(e.getKey(), 0L);
                perWorker.put(e.getKey(), Math.max(0, e.getValue() - before) / rateSecs);
            }
            long finished = sum(now.counters().succeededByDuration()) + now.counters().failed()
                    - sum(rateBase.counters().succeededByDuration()) - rateBase.counters().failed();
            total = finished / rateSecs;
        }
        if (latencyBase == null) {
            return new Activity(rateSecs, perWorker, total, 0, 0, 0, null, null);
        }
        long[] inSpan = new long[bucketBounds.length + 1];
        for (int i = 0; i < inSpan.length; i++) {
            inSpan[i] = now.counters().succeededByDuration()[i] - latencyBase.counters().succeededByDuration()[i];
        }
        long succeeded = sum(inSpan);
        return new Activity(rateSecs, perWorker, total, seconds(now.nanos() - latencyBase.nanos()), succeeded,
                now.counters().failed() - latencyBase.counters().failed(),
                succeeded == 0 ? null : quantileMs(inSpan, succeeded, 0.50),
                succeeded == 0 ? null : quantileMs(inSpan, succeeded, 0.99));
    }

    /** The oldest kept reading at most {@code span} before {@code now} and at least the minimum span before it. */
    private Reading oldestWithin(Reading now, long span) {
        for (Reading r : kept) {
            long age = now.nanos() - r.nanos();
            if (age <= span) {
                return age >= MIN_SPAN_NANOS ? r : null;
            }
        }
        return null;
    }

    private double quantileMs(long[] counts, long total, double q) {
        double rank = q * total;
        long below = 0;
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] > 0 && below + counts[i] >= rank) {
                double lower = i == 0 ? 0 : bucketBounds[i - 1];
                if (i == bucketBounds.length) {
                    // Above the highest bound nothing says how far above: report the bound, as histogram_quantile does.
                    return lower * 1000;
                }
                return (lower + (bucketBounds[i] - lower) * (rank - below) / counts[i]) * 1000;
            }
            below += counts[i];
        }
        return bucketBounds[bucketBounds.length - 1] * 1000;
    }

    private static long sum(long[] values) {
        long total = 0;
        for (long v : values) {
            total += v;
        }
        return total;
    }

    private static double seconds(long nanos) {
        return nanos / 1e9;
    }
}
