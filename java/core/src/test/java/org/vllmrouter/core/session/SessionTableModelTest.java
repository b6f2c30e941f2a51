package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.vllmrouter.core.worker.Worker;

/**
 * Single-threaded randomized test against a reference model: random routes (with random subsets of
 * workers available, modelling health flips and removals), releases, clock jumps and expiry drains.
 * Invariants are checked after every step; exact per-worker counts after every full drain.
 */
class SessionTableModelTest {
    private static final Duration TTL = Duration.ofSeconds(10);
    private static final int SMALL_MAX = 12;

    private record Key(String pool, String id) {
    }

    private record Bound(String url, long lastUsed) {
    }

    @RepeatedTest(30)
    void matchesModelExactlyWithExactLruOrder(RepetitionInfo rep) {
        run(0x5eed0000L + rep.getCurrentRepetition(), Duration.ZERO);
    }

    @RepeatedTest(30)
    void matchesModelWithinTheGranularityWithCoarseRequeueing(RepetitionInfo rep) {
        run(0x6eed0000L + rep.getCurrentRepetition(), TTL.dividedBy(4));
    }

    /**
     * A table of at most {@value #SMALL_MAX} sessions in exact least-recently-used order, against a model that
     * says which binding each call drops: the expired ones from the front (a bounded batch per route), and the
     * least recently used one when a new session finds the table full.
     */
    @RepeatedTest(30)
    void matchesAnExactLruModelWhenFull(RepetitionInfo rep) {
        long seed = 0x7eed0000L + rep.getCurrentRepetition();
        SplittableRandom random = new SplittableRandom(seed);
        AtomicLong clock = new AtomicLong();
        InMemorySessionTable table = new InMemorySessionTable(TTL, SMALL_MAX, clock::get, Duration.ZERO);
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            workers.add(Worker.builder("http://w" + i + ":8000").build());
        }
        // Queue order, least recently used first.
        LinkedHashMap<Key, Bound> model = new LinkedHashMap<>();
        long evicted = 0;
        String[] pools = {"", "m1"};
        for (int step = 0; step < 3000; step++) {
            String where = "seed=" + seed + " step=" + step;
            long now = clock.get();
            int op = random.nextInt(100);
            if (op < 70) {
                List<Worker> candidates = workers.stream().filter(w -> random.nextInt(10) < 8).toList();
                if (candidates.isEmpty()) {
                    candidates = List.of(workers.get(0));
                }
                Key key = new Key(pools[random.nextInt(pools.length)], "s" + random.nextInt(30));
                dropExpired(model, now, InMemorySessionTable.EXPIRY_BATCH_PER_ROUTE);
                Bound before = model.remove(key);
                SessionTable.Assignment a = table.route(key.pool(), key.id(), candidates);
                if (before == null) {
                    if (model.size() >= SMALL_MAX) {
                        Key lru = model.keySet().iterator().next();
                        model.remove(lru);
                        evicted++;
                    }
                    assertSame(SessionTable.Outcome.STARTED, a.outcome(), where);
                } else if (isLive(before, now) && candidates.stream().anyMatch(w -> w.url().equals(before.url()))) {
                    assertSame(SessionTable.Outcome.EXISTING, a.outcome(), where);
                    assertEquals(before.url(), a.worker().url(), "sticky " + where);
                } else {
                    assertSame(SessionTable.Outcome.REBOUND, a.outcome(), where);
                }
                model.put(key, new Bound(a.worker().url(), now));
            } else if (op < 80) {
                String id = "s" + random.nextInt(30);
                long bindings = model.keySet().stream().filter(k -> k.id().equals(id)).count();
                assertEquals(bindings, table.release(id), "released " + where);
                model.keySet().removeIf(k -> k.id().equals(id));
            } else if (op < 95) {
                clock.addAndGet(random.nextLong(TTL.toNanos() / 4));
            } else {
                int batch = 1 + random.nextInt(3);
                assertEquals(dropExpired(model, clock.get(), batch), table.expireIdle(batch), "expired " + where);
            }
            SessionStats s = table.stats();
            Map<String, Integer> counts = new HashMap<>();
            model.values().forEach(b -> counts.merge(b.url(), 1, Integer::sum));
            assertEquals(counts, s.activeByWorker(), "counts " + where);
            assertEquals(evicted, s.evicted(), "evictions " + where);
            assertTrue(s.activeSessions() <= SMALL_MAX, where);
            checkInvariants(s, model, clock.get(), where);
        }
    }

    /** Drops up to {@code max} expired bindings from the front of the queue model; how many it dropped. */
    private static int dropExpired(LinkedHashMap<Key, Bound> model, long now, int max) {
        int n = 0;
        var it = model.values().iterator();
        while (n < max && it.hasNext()) {
            if (isLive(it.next(), now)) {
                break;
            }
            it.remove();
            n++;
        }
        return n;
    }

    private void run(long seed, Duration granularity) {
        SplittableRandom random = new SplittableRandom(seed);
        AtomicLong clock = new AtomicLong();
        InMemorySessionTable table = new InMemorySessionTable(TTL, InMemorySessionTable.DEFAULT_MAX_SESSIONS, clock::get,
                granularity);
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            workers.add(Worker.builder("http://w" + i + ":8000").build());
        }
        Map<Key, Bound> model = new HashMap<>();
        String[] pools = {"", "m1", "m2"};
        for (int step = 0; step < 3000; step++) {
            String where = "seed=" + seed + " step=" + step;
            int op = random.nextInt(100);
            if (op < 65) {
                List<Worker> candidates = new ArrayList<>();
                for (Worker w : workers) {
                    if (random.nextInt(10) < 8) {
                        candidates.add(w);
                    }
                }
                if (candidates.isEmpty()) {
                    candidates.add(workers.get(random.nextInt(workers.size())));
                }
                Key key = new Key(pools[random.nextInt(pools.length)], "s" + random.nextInt(40));
                Bound before = model.get(key);
                SessionTable.Assignment a = table.route(key.pool(), key.id(), candidates);
                assertTrue(candidates.contains(a.worker()), where);
                long now = clock.get();
                boolean live = before != null && now - before.lastUsed() < TTL.toNanos();
                boolean stillCandidate = before != null
                        && candidates.stream().anyMatch(w -> w.url().equals(before.url()));
                if (live && stillCandidate) {
                    assertEquals(before.url(), a.worker().url(), "sticky " + where);
                    assertSame(SessionTable.Outcome.EXISTING, a.outcome(), where);
                } else {
                    assertTrue(a.outcome() != SessionTable.Outcome.EXISTING, where);
                }
                model.put(key, new Bound(a.worker().url(), now));
            } else if (op < 80) {
                String id = "s" + random.nextInt(40);
                int expected = (int) model.keySet().stream()
                        .filter(k -> k.id().equals(id) && isLive(model.get(k), clock.get())).count();
                int released = table.release(id);
                assertTrue(released >= expected, "released live bindings " + where);
                model.keySet().removeIf(k -> k.id().equals(id));
            } else if (op < 92) {
                clock.addAndGet(random.nextLong(TTL.toNanos() / 3));
            } else if (op < 97) {
                table.expireIdle(1 + random.nextInt(3));
            } else {
                table.expireIdle(Integer.MAX_VALUE);
                long now = clock.get();
                long lateLimit = TTL.plus(granularity).toNanos();
                Map<String, Integer> live = new HashMap<>();
                Map<String, Integer> notYetDropped = new HashMap<>();
                model.values().forEach(b -> {
                    if (isLive(b, now)) {
                        live.merge(b.url(), 1, Integer::sum);
                    }
                    if (now - b.lastUsed() < lateLimit) {
                        notYetDropped.merge(b.url(), 1, Integer::sum);
                    }
                });
                Map<String, Integer> actual = table.stats().activeByWorker();
                if (granularity.isZero()) {
                    assertEquals(live, actual, "exact counts " + where);
                    model.values().removeIf(b -> !isLive(b, now));
                } else {
                    for (String url : notYetDropped.keySet()) {
                        int n = actual.getOrDefault(url, 0);
                        assertTrue(n >= live.getOrDefault(url, 0) && n <= notYetDropped.get(url),
                                "counts within the granularity " + where + " " + url + " " + n);
                    }
                    model.values().removeIf(b -> now - b.lastUsed() >= lateLimit);
                }
            }
            checkInvariants(table.stats(), model, clock.get(), where);
        }
    }

    private static boolean isLive(Bound b, long now) {
        return now - b.lastUsed() < TTL.toNanos();
    }

    static void checkInvariants(SessionStats s, Map<Key, Bound> model, long now, String where) {
        int sum = s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum();
        assertEquals(s.activeSessions(), sum, "conservation " + where);
        assertTrue(s.activeByWorker().values().stream().allMatch(n -> n > 0), "positive counts " + where);
        assertEquals(s.started() - s.released() - s.expired() - s.evicted(), s.activeSessions(),
                "lifetime counters " + where);
        long live = model.values().stream().filter(b -> isLive(b, now)).count();
        assertTrue(s.activeSessions() >= live && s.activeSessions() <= model.size(),
                "tracked " + s.activeSessions() + " live " + live + " model " + model.size() + " " + where);
    }
}
