package org.vllmrouter.server.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The per-thread metrics scrape exactly as the Prometheus client's own metrics fed the same values, and lose no
 * count when many threads (more than have slots of their own) write at once.
 */
class ShardedMetricsTest {
    private static final double[] BOUNDS = {0.001, 0.01, 0.1, 1, 10};

    private static String scrape(PrometheusRegistry registry) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrometheusTextFormatWriter.create().write(out, registry.scrape());
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void scrapesAsTheClientsCounterAndHistogram() throws IOException {
        PrometheusRegistry client = new PrometheusRegistry();
        Counter clientCounter = Counter.builder().name("t_http_requests_total").help("HTTP requests")
                .labelNames("route", "method").withoutExemplars().register(client);
        Histogram clientHistogram = Histogram.builder().name("t_duration_seconds").help("Duration").labelNames("route")
                .classicOnly().classicUpperBounds(BOUNDS).withoutExemplars().register(client);
        Counter clientSuccesses = Counter.builder().name("t_requests_total").help("Successes").labelNames("route")
                .withoutExemplars().register(client);
        Histogram clientAll = Histogram.builder().name("t_all_seconds").help("All").classicOnly()
                .classicUpperBounds(BOUNDS).withoutExemplars().register(client);
        Counter clientOne = Counter.builder().name("t_one_total").help("One route").withoutExemplars().register(client);
        Histogram clientOneDuration = Histogram.builder().name("t_one_seconds").help("One route's").classicOnly()
                .classicUpperBounds(BOUNDS).withoutExemplars().register(client);

        PrometheusRegistry sharded = new PrometheusRegistry();
        ShardedCounter counter = new ShardedCounter(sharded, "t_http_requests_total", "HTTP requests", "route", "method");
        ShardedHistogram histogram = new ShardedHistogram("t_duration_seconds", "Duration", BOUNDS, "route");
        sharded.register(histogram);
        sharded.register(histogram.countOf("t_requests_total", "Successes", true, r -> true));
        sharded.register(histogram.sumOf("t_all_seconds", "All", r -> true));
        sharded.register(histogram.countOf("t_one_total", "One route", false, r -> r.get(0).equals("/b")));
        sharded.register(histogram.sumOf("t_one_seconds", "One route's", r -> r.get(0).equals("/b")));

        // Before anything is counted: the unlabelled metrics show zeros, the labelled ones nothing.
        assertEquals(scrape(client), scrape(sharded));

        // Values on the bounds (a bound is its bucket's own), between them, above the last, and zero.
        double[] values = {0, 0.001, 0.0010001, 0.01, 0.05, 0.1, 1, 9.99, 10, 10.5, 250};
        String[] routes = {"/a", "/b", "/a\"quoted\\", "/c"};
        for (int i = 0; i < values.length; i++) {
            String route = routes[i % routes.length];
            clientCounter.labelValues(route, i % 2 == 0 ? "GET" : "POST").inc();
            counter.labelValues(route, i % 2 == 0 ? "GET" : "POST").inc();
            clientHistogram.labelValues(route).observe(values[i]);
            clientSuccesses.labelValues(route).inc();
            clientAll.observe(values[i]);
            if (route.equals("/b")) {
                clientOne.inc();
                clientOneDuration.observe(values[i]);
            }
            histogram.labelValues(route).observe(values[i]);
        }
        String expected = scrape(client);
        assertTrue(expected.contains("t_duration_seconds_bucket{route=\"/a\",le=\"10.0\"} 3"), expected);
        assertEquals(expected, scrape(sharded));
    }

    @Test
    void theCountsOfEveryBucketAreReadBackPerPoint() {
        ShardedHistogram histogram = new ShardedHistogram("t_seconds", "t", BOUNDS, "route");
        ShardedHistogram.Point point = histogram.labelValues("/a");
        point.observe(0.001);
        point.observe(0.5);
        point.observe(0.5);
        point.observe(11);
        histogram.labelValues("/b").observe(0.002);
        assertEquals(List.of(1L, 0L, 0L, 2L, 0L, 1L), asList(point.counts()));
        assertEquals(12.001, point.sum(), 1e-12);
        assertEquals(List.of(1L, 1L, 0L, 2L, 0L, 1L), asList(histogram.counts(r -> true)));
        assertEquals(List.of(0L, 1L, 0L, 0L, 0L, 0L), asList(histogram.counts(r -> r.get(0).equals("/b"))));
    }

    @Test
    void aWrongNumberOfLabelValuesIsRefusedAndChangesNothing() throws IOException {
        PrometheusRegistry registry = new PrometheusRegistry();
        ShardedCounter counter = new ShardedCounter(registry, "t_total", "t", "route", "method");
        ShardedHistogram histogram = new ShardedHistogram("t_seconds", "t", BOUNDS, "route");
        registry.register(histogram);
        String before = scrape(registry);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> counter.labelValues("/a"));
        assertEquals("t takes 2 label values, got 1", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> histogram.labelValues("/a", "GET"));
        assertEquals(before, scrape(registry));
    }

    @Test
    void aNameTakenByAnotherMetricIsRefusedAtRegistration() {
        PrometheusRegistry registry = new PrometheusRegistry();
        new ShardedCounter(registry, "t_total", "t", "route");
        assertThrows(IllegalArgumentException.class, () -> new ShardedCounter(registry, "t_total", "t", "route"));
    }

    /**
     * Writers beyond the slots of their own share the atomic one: with three times as many writers as owned slots,
     * every count and the exact sum arrive, and a scrape taken meanwhile never goes backwards.
     */
    @Test
    void concurrentWritersLoseNothing() throws Exception {
        ShardedCounter counter = new ShardedCounter(new PrometheusRegistry(), "t_total", "t", "route");
        ShardedHistogram histogram = new ShardedHistogram("t_seconds", "t", BOUNDS, "route");
        ShardedCounter.Point count = counter.labelValues("/a");
        ShardedHistogram.Point duration = histogram.labelValues("/a");
        int writers = 3 * ThreadSlots.OWNED;
        int each = 20_000;
        CountDownLatch start = new CountDownLatch(1);
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicReference<String> readerFailure = new AtomicReference<>();
        Thread reader = new Thread(() -> {
            long last = 0;
            while (writing.get()) {
                long now = count.value();
                if (now < last) {
                    readerFailure.set("count went from " + last + " to " + now);
                }
                last = now;
            }
        });
        reader.start();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < writers; t++) {
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                for (int i = 0; i < each; i++) {
                    count.inc();
                    // Binary fractions, so the sum is exact whatever the order of the additions.
                    duration.observe(i % 2 == 0 ? 0.5 : 0.0625);
                }
            });
            thread.start();
            threads.add(thread);
        }
        start.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
        writing.set(false);
        reader.join();
        assertEquals(null, readerFailure.get());
        long total = (long) writers * each;
        assertEquals(total, count.value());
        long[] counts = duration.counts();
        assertEquals(total / 2, counts[3]);
        assertEquals(total / 2, counts[2]);
        assertEquals(total / 2 * 0.5 + total / 2 * 0.0625, duration.sum());
    }

    @Test
    void liveThreadsGetSlotsOfTheirOwnUntilTheyRunOutAndAFinishedThreadsSlotIsReused() throws Exception {
        ThreadSlots slots = new ThreadSlots(2);
        CountDownLatch release = new CountDownLatch(1);
        List<Thread> holders = new ArrayList<>();
        Set<Integer> claimed = new HashSet<>();
        for (int i = 0; i < 2; i++) {
            Thread holder = new Thread(() -> awaitQuietly(release));
            holder.start();
            holders.add(holder);
            claimed.add(slots.claim(holder));
        }
        assertEquals(Set.of(0, 1), claimed);
        Thread third = new Thread(() -> { });
        assertEquals(2, slots.claim(third), "every slot has a live owner: the shared slot");
        assertEquals(slots.claim(holders.get(0)), slots.claim(holders.get(0)), "a thread asking again keeps its slot");
        release.countDown();
        holders.get(1).join();
        int reused = slots.claim(third);
        assertNotEquals(2, reused, "a finished owner's slot passes on");
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static List<Long> asList(long[] values) {
        List<Long> list = new ArrayList<>();
        for (long v : values) {
            list.add(v);
        }
        return list;
    }
}
