package org.vllmrouter.server.metrics;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.session.SessionStats;

/** Rates and percentiles from readings of cumulative counters, on a clock the test moves. */
class ActivityWindowTest {
    private static final double[] BOUNDS = {0.01, 0.1, 1};

    private long nanos;
    private ActivityWindow.Counters counters = counters(Map.of(), new long[4], 0);
    private final ActivityWindow window = new ActivityWindow(() -> counters, () -> nanos, BOUNDS);

    private static ActivityWindow.Counters counters(Map<String, Long> byWorker, long[] durations, long failed) {
        return new ActivityWindow.Counters(byWorker, durations, failed);
    }

    private void at(double seconds) {
        nanos = (long) (seconds * 1e9);
    }

    @Test
    void theFirstReadingHasNothingToCompareWith() {
        ActivityWindow.Activity first = window.read();
        assertEquals(0, first.rateSecs());
        assertNull(first.requestsPerSecond());
        assertTrue(first.requestsPerSecondByWorker().isEmpty());
        assertNull(first.p50Ms());
        assertEquals(0, first.latencySecs());
    }

    @Test
    void ratesPerWorkerAndForTheRouter() {
        at(0);
        counters = counters(Map.of("w1", 100L), new long[4], 0);
        window.read();
        at(2);
        // w2 joined after the first reading: its count started at zero.
        counters = counters(Map.of("w1", 110L, "w2", 4L), new long[] {0, 12, 0, 0}, 2);
        ActivityWindow.Activity a = window.read();
        assertEquals(2.0, a.rateSecs(), 1e-9);
        assertEquals(5.0, a.requestsPerSecondByWorker().get("w1"), 1e-9);
        assertEquals(2.0, a.requestsPerSecondByWorker().get("w2"), 1e-9);
        assertEquals(7.0, a.requestsPerSecond(), 1e-9, "12 succeeded and 2 failed in 2 s");
        assertEquals(12, a.succeeded());
        assertEquals(2, a.failed());
    }

    @Test
    void twoPollsAMomentApartGiveNoRate() {
        at(0);
        window.read();
        at(0.1);
        counters = counters(Map.of("w1", 1L), new long[] {1, 0, 0, 0}, 0);
        ActivityWindow.Activity a = window.read();
        assertNull(a.requestsPerSecond());
        assertNull(a.requestsPerSecondByWorker().get("w1"));
    }

    @Test
    void percentilesInterpolateInsideTheBucket() {
        at(0);
        window.read();
        at(1);
        // 100 requests between 10 ms and 100 ms.
        counters = counters(Map.of(), new long[] {0, 100, 0, 0}, 0);
        ActivityWindow.Activity a = window.read();
        assertEquals(55.0, a.p50Ms(), 1e-9);
        assertEquals(99.1, a.p99Ms(), 1e-9);
    }

    @Test
    void aboveTheHighestBoundThePercentileIsThatBound() {
        at(0);
        window.read();
        at(1);
        counters = counters(Map.of(), new long[] {10, 0, 0, 1}, 0);
        ActivityWindow.Activity a = window.read();
        assertEquals(5.5, a.p50Ms(), 1e-9);
        assertEquals(1000.0, a.p99Ms(), 1e-9);
    }

    @Test
    void ratesCoverAboutTenSecondsAndLatencyAboutAMinute() {
        // Polled once a second for two minutes; 3 requests a second until t=100, none after.
        long[] durations = new long[4];
        for (int t = 0; t <= 120; t++) {
            at(t);
            if (t > 0 && t <= 100) {
                durations[0] += 3;
            }
            counters = counters(Map.of(), durations.clone(), 0);
            ActivityWindow.Activity a = window.read();
            if (t == 60) {
                assertEquals(10.0, a.rateSecs(), 1e-9);
                assertEquals(3.0, a.requestsPerSecond(), 1e-9);
                assertEquals(60.0, a.latencySecs(), 1e-9);
                assertEquals(180, a.succeeded());
            }
            if (t == 105) {
                assertEquals(15.0 / 10, a.requestsPerSecond(), 1e-9, "5 of the last 10 s had traffic");
            }
        }
        ActivityWindow.Activity last = window.read();
        assertEquals(0.0, last.requestsPerSecond(), 1e-9);
        assertEquals(60.0, last.latencySecs(), 1e-9);
        assertEquals(40 * 3, last.succeeded(), "t=61..100 is inside the minute that ends at t=120");
    }

    @Test
    void fastPollingKeepsTheWindowAMinuteLong() {
        for (int i = 0; i <= 12_000; i++) {
            nanos = TimeUnit.MILLISECONDS.toNanos(10L * i);
            window.read();
        }
        ActivityWindow.Activity a = window.read();
        assertTrue(a.latencySecs() <= 61 && a.latencySecs() >= 59, "window " + a.latencySecs());
        assertTrue(a.rateSecs() <= 11 && a.rateSecs() >= 9, "rate span " + a.rateSecs());
    }

    @Test
    void routerMetricsGiveCountsPerBucketNotCumulative() {
        RouterMetrics metrics = new RouterMetrics(List::of, () -> SessionStats.EMPTY, () -> false);
        for (int i = 0; i < 3; i++) {
            metrics.requestEnded("/v1/completions", 200, true, 0.05);
        }
        metrics.requestEnded("/generate", 200, true, 0.5);
        metrics.requestEnded("/generate", 200, true, 500);
        metrics.requestEnded("/generate", 503, false, 0.5);
        metrics.requestFailed("/v1/completions", "rate_limited");
        long[] expected = new long[RouterMetrics.durationBuckets().length + 1];
        expected[4] = 3; // le 0.05
        expected[7] = 1; // le 0.5
        expected[expected.length - 1] = 1; // above 240 s
        assertArrayEquals(expected, metrics.succeededByDuration());
        assertEquals(2, metrics.failedRequests());
    }
}
