package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.worker.Worker;

class InMemorySessionTableTest {
    private final AtomicLong clock = new AtomicLong();

    private static List<Worker> workers(int n) {
        List<Worker> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(Worker.builder("http://w" + i + ":8000").build());
        }
        return out;
    }

    @Test
    void routeDrainsOnlyABoundedNumberOfExpiredSessionsPerCall() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofSeconds(1), clock::get);
        List<Worker> ws = workers(2);
        for (int i = 0; i < 100; i++) {
            table.route("", "idle-" + i, ws);
        }
        clock.addAndGet(Duration.ofSeconds(2).toNanos());
        table.route("", "fresh", ws);
        SessionStats s = table.stats();
        assertEquals(InMemorySessionTable.EXPIRY_BATCH_PER_ROUTE, s.expired());
        assertEquals(101 - InMemorySessionTable.EXPIRY_BATCH_PER_ROUTE, s.activeSessions());
        assertEquals(10, table.expireIdle(10));
        assertEquals(100 - InMemorySessionTable.EXPIRY_BATCH_PER_ROUTE - 10, table.expireIdle(Integer.MAX_VALUE));
        assertEquals(1, table.stats().activeSessions());
    }

    @Test
    void expiryStopsAtTheFirstLiveSessionInUseOrder() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofSeconds(10), clock::get);
        List<Worker> ws = workers(2);
        table.route("", "a", ws);
        table.route("", "b", ws);
        clock.addAndGet(Duration.ofSeconds(6).toNanos());
        table.route("", "a", ws);
        clock.addAndGet(Duration.ofSeconds(5).toNanos());
        assertEquals(1, table.expireIdle(100), "only b is idle for 10 s");
        assertEquals(1, table.stats().activeSessions());
        assertEquals(SessionTable.Outcome.EXISTING, table.route("", "a", ws).outcome());
    }

    @Test
    void coarseRequeueingDropsExpiredSessionsAtMostOneGranularityLate() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofSeconds(10), InMemorySessionTable.DEFAULT_MAX_SESSIONS,
                clock::get, Duration.ofSeconds(2));
        List<Worker> ws = workers(2);
        table.route("", "head", ws);
        advanceMillis(1000);
        table.route("", "behind", ws);
        advanceMillis(500);
        table.route("", "head", ws);
        advanceMillis(9500);
        assertEquals(0, table.expireIdle(100), "head is live and still first in the queue; behind just expired");
        assertEquals(SessionTable.Outcome.REBOUND, table.route("", "behind", ws).outcome(),
                "a revisit decides expiry on the exact last use");
        advanceMillis(499);
        assertEquals(0, table.expireIdle(100));
        advanceMillis(1);
        assertEquals(1, table.expireIdle(100), "head expires exactly at its last use + TTL");
    }

    @Test
    void defaultGranularityIsASixteenthOfTheTtlCappedAtAMinute() {
        assertEquals(0, expiredAfterHitAt(Duration.ofSeconds(16), 999), "hit within 1 s of queueing: not requeued");
        assertEquals(1, expiredAfterHitAt(Duration.ofSeconds(16), 1000), "hit 1 s after queueing: requeued");
        assertEquals(1, expiredAfterHitAt(Duration.ofHours(2), 60_000), "capped at 60 s, not 7200/16 s");
    }

    /** Sessions a and b start together, a is used again after {@code hitMillis}; how many expire at b's expiry. */
    private int expiredAfterHitAt(Duration ttl, long hitMillis) {
        clock.set(0);
        InMemorySessionTable table = new InMemorySessionTable(ttl, clock::get);
        List<Worker> ws = workers(1);
        table.route("", "a", ws);
        table.route("", "b", ws);
        advanceMillis(hitMillis);
        table.route("", "a", ws);
        clock.set(ttl.toNanos());
        return table.expireIdle(100);
    }

    private void advanceMillis(long millis) {
        clock.addAndGet(Duration.ofMillis(millis).toNanos());
    }

    @Test
    void releaseCoversEveryPoolAndIsIdempotent() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(1), clock::get);
        List<Worker> ws = workers(2);
        table.route("m1", "x", ws);
        table.route("m2", "x", ws);
        table.route("m1", "y", ws);
        assertEquals(2, table.release("x"));
        assertEquals(0, table.release("x"));
        assertEquals(0, table.release("never-seen"));
        assertEquals(1, table.stats().activeSessions());
    }

    @Test
    void expiryOfOneBindingKeepsTheSameIdInOtherPools() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofSeconds(10), clock::get);
        List<Worker> ws = workers(2);
        table.route("m1", "x", ws);
        table.route("m2", "x", ws);
        table.route("m3", "x", ws);
        clock.addAndGet(Duration.ofSeconds(6).toNanos());
        table.route("m1", "x", ws);
        table.route("m3", "x", ws);
        clock.addAndGet(Duration.ofSeconds(5).toNanos());
        assertEquals(1, table.expireIdle(100));
        assertEquals(SessionTable.Outcome.EXISTING, table.route("m1", "x", ws).outcome());
        assertEquals(SessionTable.Outcome.EXISTING, table.route("m3", "x", ws).outcome());
        assertEquals(SessionTable.Outcome.STARTED, table.route("m2", "x", ws).outcome());
        assertEquals(3, table.release("x"));
    }

    @Test
    void leastLoadedListsTiesInCandidateOrderWithoutChangingState() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(1), clock::get);
        List<Worker> ws = workers(3);
        Worker busy = table.route("", "s", ws).worker();
        List<Worker> expected = new ArrayList<>(ws);
        expected.remove(busy);
        assertEquals(expected, table.leastLoaded(ws));
        assertEquals(1, table.stats().activeSessions());
    }

    @Test
    void routeWithoutCandidatesIsRejectedWithoutTouchingState() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(1), clock::get);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> table.route("", "s", List.of()));
        assertTrue(e.getMessage().contains("candidate"));
        assertEquals(SessionStats.EMPTY, table.stats());
    }

    @Test
    void negativeTtlIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new InMemorySessionTable(Duration.ofSeconds(-1), clock::get));
    }

    @Test
    void aFullTableEvictsTheLeastRecentlyUsedSessionAndReleasesItsCount() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(1), 3, clock::get, Duration.ZERO);
        List<Worker> ws = workers(2);
        for (String id : List.of("a", "b", "c")) {
            table.route("", id, ws);
            advanceMillis(1);
        }
        table.route("", "a", ws);
        advanceMillis(1);
        assertEquals(SessionTable.Outcome.STARTED, table.route("", "d", ws).outcome());
        SessionStats s = table.stats();
        assertEquals(3, s.activeSessions());
        assertEquals(1, s.evicted());
        assertEquals(3, s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum());
        assertEquals(0, table.release("b"), "b was the least recently used: evicted");
        assertEquals(SessionTable.Outcome.EXISTING, table.route("", "a", ws).outcome());
        assertEquals(SessionTable.Outcome.STARTED, table.route("", "b", ws).outcome(), "an evicted id starts anew");
        assertEquals(2, table.stats().evicted(), "and evicts c, now the least recently used");
        assertEquals(0, table.release("c"));
        assertEquals(s.started() + 1 - s.released() - s.expired() - table.stats().evicted(),
                table.stats().activeSessions());
    }

    @Test
    void evictingAnIdsBindingInAnotherPoolKeepsTheIndexWhole() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(1), 1, clock::get);
        List<Worker> ws = workers(2);
        table.route("m1", "x", ws);
        assertEquals(SessionTable.Outcome.STARTED, table.route("m2", "x", ws).outcome());
        assertEquals(1, table.stats().evicted());
        assertEquals(SessionTable.Outcome.EXISTING, table.route("m2", "x", ws).outcome());
        assertEquals(1, table.release("x"));
        assertEquals(0, table.stats().activeSessions());
        assertEquals(Map.of(), table.stats().activeByWorker());
    }

    @Test
    void aSessionInUseSurvivesAFloodOfOneOffIds() {
        // Default requeue granularity (60 s here): the flood turns the table over far faster than that.
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(1), 100, clock::get);
        List<Worker> ws = workers(4);
        String hotWorker = table.route("", "trajectory", ws).worker().url();
        for (int i = 0; i < 10_000; i++) {
            table.route("", "request-" + i, ws);
            advanceMillis(1);
            if (i % 50 == 0) {
                SessionTable.Assignment a = table.route("", "trajectory", ws);
                assertEquals(SessionTable.Outcome.EXISTING, a.outcome(), "after " + i + " one-off ids");
                assertEquals(hotWorker, a.worker().url());
            }
        }
        SessionStats s = table.stats();
        assertEquals(100, s.activeSessions());
        assertEquals(10_001 - 100, s.evicted());
    }

    @Test
    void idsWithEqualStringHashesAreDistinctSessions() {
        // "AaAa", "AaBB", "BBAa", "BBBB", ...: one String hash, so the table tells them apart by their characters.
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(1), 1_000, clock::get);
        List<Worker> ws = workers(3);
        List<String> ids = new ArrayList<>();
        for (int bits = 0; bits < 64; bits++) {
            StringBuilder id = new StringBuilder();
            for (int k = 0; k < 6; k++) {
                id.append((bits >> k & 1) == 0 ? "Aa" : "BB");
            }
            ids.add(id.toString());
        }
        Map<String, String> workerOf = new HashMap<>();
        for (String id : ids) {
            SessionTable.Assignment a = table.route("", id, ws);
            assertEquals(SessionTable.Outcome.STARTED, a.outcome(), id);
            workerOf.put(id, a.worker().url());
        }
        for (int i = 0; i < ids.size(); i += 2) {
            assertEquals(1, table.release(ids.get(i)), ids.get(i));
        }
        table.checkStructure();
        for (int i = 0; i < ids.size(); i++) {
            String id = new String(ids.get(i).toCharArray());
            SessionTable.Assignment a = table.route("", id, ws);
            if (i % 2 == 0) {
                assertEquals(SessionTable.Outcome.STARTED, a.outcome(), id);
            } else {
                assertEquals(SessionTable.Outcome.EXISTING, a.outcome(), id);
                assertEquals(workerOf.get(id), a.worker().url(), id);
            }
        }
        assertEquals(64, table.stats().activeSessions());
        table.checkStructure();
    }

    @Test
    void aMillionDistinctIdsKeepTheTableAtItsBound() {
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(2), 100_000, clock::get);
        List<Worker> ws = workers(8);
        for (int i = 0; i < 1_000_000; i++) {
            table.route("", "id-" + i, ws);
        }
        SessionStats s = table.stats();
        assertEquals(100_000, s.activeSessions());
        assertEquals(900_000, s.evicted());
        assertEquals(100_000, s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum());
        assertTrue(s.activeByWorker().values().stream().allMatch(n -> n > 0));
    }

    @Test
    void aSessionsTrajectoryIsHandedOnOnceAsItIsReleasedExpiredOrEvicted() {
        List<Trajectory> ended = new ArrayList<>();
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofSeconds(10), 2, clock::get, ended::add);
        List<Worker> ws = workers(2);
        Worker first = table.route("m", "a", ws).worker();
        table.turnEnded("m", "a", 100, Trajectory.NOT_REPORTED);
        table.route("m", "a", ws.stream().filter(w -> w != first).toList());
        table.turnEnded("m", "a", 120, 96);
        table.turnEnded("other-pool", "a", 1000, 1000);
        table.turnEnded("m", "unknown", 1000, 1000);
        Trajectory a = table.trajectory("a");
        assertEquals(new Trajectory(List.of(a.workers().get(0)), 220, 96, 2, 1), a);
        assertTrue(!a.workers().get(0).equals(first.url()));
        assertEquals(96.0 / 220, a.cachedTokenRate(), 1e-9);

        assertEquals(1, table.release("a"));
        assertEquals(0, table.release("a"));
        assertEquals(List.of(a), ended);
        assertEquals(null, table.trajectory("a"));

        table.route("m", "b", ws);
        table.route("m", "c", ws);
        table.route("m", "d", ws);
        assertEquals(2, ended.size(), "evicting b ends its trajectory");
        assertEquals(-1, ended.get(1).cachedTokenRate());
        clock.addAndGet(Duration.ofSeconds(11).toNanos());
        assertEquals(2, table.expireIdle(10));
        assertEquals(4, ended.size());
    }

    @Test
    void maxSessionsMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> new InMemorySessionTable(Duration.ofHours(1), 0, clock::get));
    }

    /** Property: with only new sessions and revisits arriving, counts never differ by more than one. */
    @RepeatedTest(50)
    void balanceWithinOneForAnyArrivalOrder(RepetitionInfo rep) {
        long seed = 0xba1a0000L + rep.getCurrentRepetition();
        SplittableRandom random = new SplittableRandom(seed);
        InMemorySessionTable table = new InMemorySessionTable(Duration.ofHours(1), clock::get);
        List<Worker> ws = workers(2 + random.nextInt(7));
        int sessions = 1 + random.nextInt(300);
        for (int i = 0; i < sessions * 3; i++) {
            table.route("", "s" + random.nextInt(sessions), ws);
            SessionStats s = table.stats();
            int min = Integer.MAX_VALUE;
            int max = 0;
            for (Worker w : ws) {
                int n = s.activeByWorker().getOrDefault(w.url(), 0);
                min = Math.min(min, n);
                max = Math.max(max, n);
            }
            assertTrue(max - min <= 1, "seed=" + seed + " step=" + i + " counts " + s.activeByWorker());
        }
    }
}
