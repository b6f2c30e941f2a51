package org.vllmrouter.core.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.hash.FbiHash;
import org.vllmrouter.core.session.BodySource;
import org.vllmrouter.core.session.HeaderLookup;
import org.vllmrouter.core.session.SessionIdExtractor;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.worker.Worker;

/** Upstream's sticky_least_loaded tests plus this project's additions. */
class StickyLeastLoadedPolicyTest {
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final List<Worker> workers = workers(3);

    static List<Worker> workers(int n) {
        List<Worker> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(Worker.builder("http://127.0.0.1:" + (8000 + i)).build());
        }
        return List.copyOf(out);
    }

    private StickyLeastLoadedPolicy policy(Duration ttl) {
        return new StickyLeastLoadedPolicy(ttl, clock::get);
    }

    private static RoutingRequest header(String sessionId) {
        HeaderLookup headers = HeaderLookup.of(Map.of("X-Session-ID", sessionId));
        return RoutingRequest.of(SessionIdExtractor.UPSTREAM.extract(headers, BodySource.EMPTY), headers, () -> "", 0);
    }

    private static RoutingRequest body(String json) {
        return RoutingRequest.of(SessionIdExtractor.UPSTREAM.extract(HeaderLookup.NONE, BodySource.of(json)),
                HeaderLookup.NONE, () -> json, json.length());
    }

    private static int count(SessionStats s, Worker w) {
        return s.activeByWorker().getOrDefault(w.url(), 0);
    }

    private void advance(Duration d) {
        clock.addAndGet(d.toNanos());
    }

    @Test
    void sessionsStartingAndFinishingLogAtDebugOnly() {
        Logger log = Logger.getLogger(StickyLeastLoadedPolicy.class.getName());
        List<LogRecord> records = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        capture.setLevel(Level.ALL);
        Level before = log.getLevel();
        log.setLevel(Level.FINE);
        log.addHandler(capture);
        try {
            StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
            for (int i = 0; i < 10; i++) {
                p.select(workers, header("traj-" + i));
                p.finishSession("traj-" + i);
            }
        } finally {
            log.removeHandler(capture);
            log.setLevel(before);
        }
        assertEquals(20, records.stream().filter(r -> r.getLevel() == Level.FINE).count(), "one debug line each");
        assertTrue(records.stream().noneMatch(r -> r.getLevel().intValue() >= Level.INFO.intValue()),
                "nothing per session at INFO or above");
    }

    @Test
    void sameSessionIsSticky() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        Worker first = p.select(workers, header("sess-1"));
        assertSame(first, p.select(workers, header("sess-1")));
        assertSame(first, p.select(workers, header("sess-1")));
        assertEquals(1, p.sessionStats().activeSessions());
        assertEquals(1, count(p.sessionStats(), first));
    }

    @Test
    void newSessionsBalanceAcrossReplicas() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        p.select(workers, header("a"));
        p.select(workers, header("b"));
        p.select(workers, header("c"));
        SessionStats s = p.sessionStats();
        for (Worker w : workers) {
            assertEquals(1, count(s, w), w.url());
        }
    }

    @Test
    void finishSessionReleasesCapacity() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        Worker w = p.select(workers, header("sess-1"));
        p.finishSession("sess-1");
        SessionStats s = p.sessionStats();
        assertEquals(0, s.activeSessions());
        assertEquals(0, count(s, w));
        assertEquals(1, s.released());
    }

    @Test
    void finishUnknownSessionIsNoop() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        p.select(workers, header("known"));
        SessionStats before = p.sessionStats();
        p.finishSession("unknown");
        assertEquals(before, p.sessionStats());
    }

    @Test
    void sessionIdFromBody() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        String json = "{\"session_id\": \"body-sess\", \"prompt\": \"hi\"}";
        Worker w = p.select(workers, body(json));
        assertSame(w, p.select(workers, body(json)));
        assertEquals(1, p.sessionStats().activeSessions());
        p.finishSession("body-sess");
        assertEquals(0, p.sessionStats().activeSessions());
    }

    @Test
    void statelessRequestsAreNotTracked() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        assertNotNull(p.select(workers, body("{\"prompt\": \"no ids here\"}")));
        assertEquals(SessionStats.EMPTY, p.sessionStats());
    }

    @Test
    void statelessRequestsGoToLeastLoadedWithTextTieBreak() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        Worker bound = p.select(workers, header("s"));
        String text = "{\"prompt\": \"stateless\"}";
        Worker w = p.select(workers, body(text));
        assertNotEquals(bound, w, "the worker holding a session is not least loaded");
        List<Worker> free = new ArrayList<>(workers);
        free.remove(bound);
        long w0 = weight(text, free.get(0));
        long w1 = weight(text, free.get(1));
        assertSame(Long.compareUnsigned(w1, w0) > 0 ? free.get(1) : free.get(0), w);
    }

    @Test
    void newSessionTieBreakIsHighestRendezvousWeight() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        Worker best = workers.get(0);
        for (Worker w : workers) {
            if (Long.compareUnsigned(weight("traj-42", w), weight("traj-42", best)) > 0) {
                best = w;
            }
        }
        assertSame(best, p.select(workers, header("traj-42")));
    }

    private static long weight(String key, Worker w) {
        return FbiHash.hash(key + ":" + w.url());
    }

    @Test
    void reassignWhenReplicaUnhealthy() {
        List<Worker> two = workers(2);
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        Worker first = p.select(two, header("s"));
        Worker other = two.get(0) == first ? two.get(1) : two.get(0);
        first.setHealthy(false);
        List<Worker> available = two.stream().filter(Worker::isAvailable).toList();
        assertSame(other, p.select(available, header("s")));
        SessionStats s = p.sessionStats();
        assertEquals(0, count(s, first));
        assertEquals(1, count(s, other));
        assertEquals(1, s.rebound());
        assertEquals(1, s.activeSessions());
    }

    @Test
    void expiredSessionIsSwept() {
        StickyLeastLoadedPolicy p = policy(Duration.ZERO);
        p.select(workers, header("old"));
        advance(Duration.ofSeconds(61));
        p.select(workers, header("new"));
        SessionStats s = p.sessionStats();
        assertEquals(1, s.activeSessions());
        assertEquals(1, s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum());
        assertEquals(1, s.expired());
    }

    @Test
    void concurrentNewSessionsReserveBalancedCapacity() throws Exception {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        int threads = 60;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Boolean>> results = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                String id = "concurrent-" + i;
                results.add(pool.submit(() -> {
                    start.await(10, TimeUnit.SECONDS);
                    Worker first = p.select(workers, header(id));
                    return first == p.select(workers, header(id));
                }));
            }
            for (Future<Boolean> r : results) {
                assertTrue(r.get(30, TimeUnit.SECONDS), "second request of a session went elsewhere");
            }
        } finally {
            pool.shutdownNow();
        }
        SessionStats s = p.sessionStats();
        assertEquals(60, s.activeSessions());
        for (Worker w : workers) {
            assertEquals(20, count(s, w), w.url());
        }
    }

    @Test
    void expiredSessionRebindsBeforeNextSweep() {
        List<Worker> two = workers(2);
        StickyLeastLoadedPolicy p = policy(Duration.ofSeconds(1));
        List<Worker> onlyFirst = List.of(two.get(0));
        p.select(onlyFirst, header("expired"));
        p.select(onlyFirst, header("active"));
        assertEquals(2, count(p.sessionStats(), two.get(0)));
        advance(Duration.ofSeconds(2));
        p.select(onlyFirst, header("active"));
        assertSame(two.get(1), p.select(two, header("expired")));
        SessionStats s = p.sessionStats();
        assertEquals(1, count(s, two.get(0)));
        assertEquals(1, count(s, two.get(1)));
    }

    @Test
    void revisitWithinTtlKeepsSessionAlive() {
        StickyLeastLoadedPolicy p = policy(Duration.ofSeconds(10));
        Worker w = p.select(workers, header("s"));
        for (int i = 0; i < 5; i++) {
            advance(Duration.ofSeconds(9));
            assertSame(w, p.select(workers, header("s")));
        }
        assertEquals(0, p.sessionStats().rebound());
        advance(Duration.ofSeconds(10));
        assertEquals(1, p.expireIdle(100));
        assertEquals(0, p.sessionStats().activeSessions());
    }

    @Test
    void ttlZeroRebindsEveryRevisit() {
        StickyLeastLoadedPolicy p = policy(Duration.ZERO);
        p.select(workers, header("s"));
        p.select(workers, header("s"));
        SessionStats s = p.sessionStats();
        assertEquals(1, s.activeSessions());
        assertEquals(1, s.expired() + s.rebound(), "the revisit found the session expired");
    }

    @Test
    void repeatedFinishPreservesOtherSessions() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        p.select(workers, header("a"));
        Worker b = p.select(workers, header("b"));
        p.finishSession("a");
        p.finishSession("a");
        SessionStats s = p.sessionStats();
        assertEquals(1, s.activeSessions());
        assertEquals(1, count(s, b));
        assertEquals(1, s.released());
    }

    @Test
    void removedWorkerRebindsSession() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        Worker first = p.select(workers, header("s"));
        List<Worker> without = workers.stream().filter(w -> w != first).toList();
        Worker now = p.select(without, header("s"));
        assertTrue(without.contains(now));
        SessionStats s = p.sessionStats();
        assertEquals(0, count(s, first));
        assertEquals(1, count(s, now));
    }

    @Test
    void missingWorkerRebindsAndTheNewBindingSticks() {
        List<Worker> two = workers(2);
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        p.select(List.of(two.get(1)), header("s"));
        Worker replacement = Worker.builder("http://127.0.0.1:9999").build();
        assertSame(two.get(0), p.select(List.of(two.get(0)), header("s")));
        assertSame(two.get(0), p.select(List.of(two.get(0), replacement), header("s")), "now sticky");
        assertEquals(0, count(p.sessionStats(), two.get(1)));
    }

    @Test
    void finishedIdCanStartAgainLater() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        p.select(workers, header("reused"));
        p.finishSession("reused");
        assertNotNull(p.select(workers, header("reused")));
        SessionStats s = p.sessionStats();
        assertEquals(1, s.activeSessions());
        assertEquals(2, s.started());
        assertEquals(1, s.released());
    }

    @Test
    void sessionsAreScopedByModel() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        p.select(workers, RoutingRequest.of("same-id", "model-a", ""));
        p.select(workers, RoutingRequest.of("same-id", "model-b", ""));
        p.select(workers, RoutingRequest.of("same-id", null, ""));
        SessionStats s = p.sessionStats();
        assertEquals(3, s.activeSessions(), "one session per model pool");
        for (Worker w : workers) {
            assertEquals(1, count(s, w), "three sessions balance over three workers");
        }
        p.finishSession("same-id");
        assertEquals(0, p.sessionStats().activeSessions());
        assertEquals(3, p.sessionStats().released());
    }

    @Test
    void noCandidatesMeansNoWorkerAndNoState() {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        assertNull(p.select(List.of(), header("s")));
        assertEquals(SessionStats.EMPTY, p.sessionStats());
    }

    @Test
    void ttlFromEnvironmentValue() {
        assertEquals(7200, StickyLeastLoadedPolicy.ttlSeconds(null));
        assertEquals(7200, StickyLeastLoadedPolicy.ttlSeconds(""));
        assertEquals(30, StickyLeastLoadedPolicy.ttlSeconds("30"));
        assertEquals(15, StickyLeastLoadedPolicy.ttlSeconds(" 15 "));
        assertEquals(0, StickyLeastLoadedPolicy.ttlSeconds("0"));
        assertEquals(7200, StickyLeastLoadedPolicy.ttlSeconds("two hours"));
        assertEquals(7200, StickyLeastLoadedPolicy.ttlSeconds("-5"));
        assertEquals(7200, StickyLeastLoadedPolicy.ttlSeconds("1.5"));
    }

    @Test
    void statsCountersAreConsistent() {
        StickyLeastLoadedPolicy p = policy(Duration.ofSeconds(5));
        Map<String, Worker> bound = new HashMap<>();
        for (int i = 0; i < 30; i++) {
            bound.put("s" + i, p.select(workers, header("s" + i)));
        }
        for (int i = 0; i < 10; i++) {
            p.finishSession("s" + i);
        }
        advance(Duration.ofSeconds(5));
        p.select(workers, header("s29"));
        p.expireIdle(Integer.MAX_VALUE);
        SessionStats s = p.sessionStats();
        assertEquals(1, s.activeSessions());
        assertEquals(s.started() - s.released() - s.expired(), s.activeSessions());
        assertEquals(10, s.released());
        assertEquals(19, s.expired());
    }

    @Test
    void concurrentFinishAndRouteOfTheSameSessionsKeepCountsConsistent() throws Exception {
        StickyLeastLoadedPolicy p = policy(Duration.ofHours(2));
        Map<String, Boolean> seen = new ConcurrentHashMap<>();
        int threads = 8;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int seed = t;
                done.add(pool.submit(() -> {
                    start.await(10, TimeUnit.SECONDS);
                    for (int i = 0; i < 2000; i++) {
                        String id = "s" + ((i * 7 + seed) % 50);
                        seen.put(id, true);
                        if (i % 3 == 0) {
                            p.finishSession(id);
                        } else {
                            p.select(workers, header(id));
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        SessionStats s = p.sessionStats();
        assertEquals(s.activeSessions(), s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum());
        assertTrue(s.activeByWorker().values().stream().allMatch(n -> n > 0));
        assertTrue(s.activeSessions() <= seen.size());
        assertEquals(s.started() - s.released() - s.expired(), s.activeSessions());
    }
}
