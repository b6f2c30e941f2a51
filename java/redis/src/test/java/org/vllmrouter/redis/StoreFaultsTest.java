package org.vllmrouter.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vllmrouter.redis.SessionTableOnRedisTests.eventually;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Collections;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.SessionTable.Outcome;
import org.vllmrouter.core.worker.Worker;

/** The store stops answering, or dies and comes back empty: routing goes on, and the counts come out right. */
class StoreFaultsTest {
    private static final Duration TTL = Duration.ofSeconds(600);

    private final AtomicLong clock = new AtomicLong(1_700_000_000_000L);
    private final List<RedisSessionStore> stores = new ArrayList<>();
    private final List<Worker> workers = new ArrayList<>();
    private RedisServer redis;

    @BeforeEach
    void setUp() throws Exception {
        redis = RedisServer.start();
        for (int i = 0; i < 3; i++) {
            workers.add(Worker.builder("http://w" + i + ":8000").build());
        }
    }

    @AfterEach
    void tearDown() throws Exception {
        stores.forEach(RedisSessionStore::close);
        redis.close();
    }

    private RedisSessionStore replica() throws Exception {
        RedisSessionStore store = RedisSessionStore.open(redis.url(), TTL, clock::get);
        stores.add(store);
        return store;
    }

    private static void assertConserved(SessionStats s) {
        int sum = s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum();
        assertEquals(s.activeSessions(), sum, "conservation " + s);
        assertTrue(s.activeByWorker().values().stream().allMatch(n -> n > 0), "positive counts " + s);
        assertEquals(s.started() - s.released() - s.expired(), s.activeSessions(), "lifetime counters " + s);
    }

    @Test
    void aStoreThatStopsAnsweringDegradesRoutingToLocalDecisionsThenReconciles() throws Exception {
        RedisSessionStore storeA = replica();
        RedisSessionStore storeB = replica();
        SessionTable a = storeA.table("default");
        SessionTable b = storeB.table("default");
        Map<String, Worker> before = new HashMap<>();
        for (int i = 0; i < 6; i++) {
            before.put("old-" + i, a.route("m", "old-" + i, workers).worker());
        }
        redis.pause();
        List<String> startedMeanwhile = new ArrayList<>();
        try {
            for (int i = 0; i < 5; i++) {
                SessionTable.Assignment fresh = a.route("m", "new-" + i, workers);
                assertEquals(Outcome.STARTED, fresh.outcome());
                startedMeanwhile.add("new-" + i);
            }
            assertTrue(storeA.degraded());
            for (Map.Entry<String, Worker> e : before.entrySet()) {
                assertEquals(e.getValue(), a.route("m", e.getKey(), workers).worker(), "known sessions stay put");
            }
            assertEquals(1, a.release("old-0"), "released here at once, in the store when it answers");
            assertEquals(1, a.release("new-0"));
        } finally {
            redis.resume();
        }
        eventually("the store answers again", () -> !storeA.degraded() && !storeB.degraded());
        SessionStats s = b.stats();
        assertConserved(s);
        assertEquals(5 + 4, s.activeSessions(), "6 old + 5 new - 2 released " + s);
        for (String id : startedMeanwhile.subList(1, startedMeanwhile.size())) {
            assertEquals(Outcome.EXISTING, b.route("m", id, workers).outcome(), id + " adopted by the store");
        }
        assertEquals(Outcome.STARTED, b.route("m", "old-0", workers).outcome(), "old-0 stays released");
    }

    @Test
    void aStoreThatRestartsEmptyGetsBackTheBindingsTheRoutersKnow() throws Exception {
        RedisSessionStore storeA = replica();
        RedisSessionStore storeB = replica();
        SessionTable a = storeA.table("default");
        SessionTable b = storeB.table("default");
        Map<String, String> bound = new HashMap<>();
        for (int i = 0; i < 20; i++) {
            SessionTable routing = i < 12 ? a : b;
            bound.put("s" + i, routing.route("m", "s" + i, workers).worker().url());
        }
        for (int i = 8; i < 12; i++) {
            b.route("m", "s" + i, workers);
        }
        redis.kill();
        redis.restart();
        eventually("both replicas noticed and reconciled", () -> {
            a.route("m", "s0", workers);
            b.route("m", "s19", workers);
            return !storeA.degraded() && !storeB.degraded() && a.stats().activeSessions() == 20;
        });
        SessionStats s = a.stats();
        assertConserved(s);
        for (Map.Entry<String, String> e : bound.entrySet()) {
            SessionTable.Assignment onB = b.route("m", e.getKey(), workers);
            assertEquals(Outcome.EXISTING, onB.outcome(), e.getKey());
            assertEquals(e.getValue(), onB.worker().url(), e.getKey() + " kept its worker");
        }
    }

    @Test
    void aReleaseMadeDuringTheOutageIsNotUndoneByAnotherReplicasRecovery() throws Exception {
        RedisSessionStore storeA = replica();
        RedisSessionStore storeB = replica();
        SessionTable a = storeA.table("default");
        SessionTable b = storeB.table("default");
        a.route("m", "done", workers);
        a.route("m", "kept", workers);
        b.route("m", "done", workers);
        redis.kill();
        eventually("b noticed", storeB::degraded);
        b.release("done");
        redis.restart();
        eventually("both reconciled", () -> {
            a.route("m", "kept", workers);
            return !storeA.degraded() && !storeB.degraded();
        });
        eventually("only 'kept' is back", () -> a.stats().activeSessions() == 1);
        assertConserved(a.stats());
        assertEquals(Outcome.STARTED, b.route("m", "done", workers).outcome());
    }

    /**
     * Two replicas bind a session differently while Redis is down, and one of them starts sessions on its own
     * while it recovers: once each has recovered, each of these sessions goes to the same worker on both.
     */
    @Test
    void afterAnOutageEveryReplicaSendsASessionWhereRedisHasIt() throws Exception {
        RedisSessionStore storeA = replica();
        RedisSessionStore storeB = replica();
        SessionTable a = storeA.table("default");
        SessionTable b = storeB.table("default");
        Worker w0 = workers.get(0);
        Worker w1 = workers.get(1);
        List<Worker> both = List.of(w0, w1);
        for (int i = 0; i < 20; i++) {
            a.route("m", "load-" + i, List.of(w1));
        }
        redis.kill();
        assertEquals(w0, a.route("m", "s", List.of(w0)).worker());
        assertEquals(w1, b.route("m", "s", List.of(w1)).worker());
        assertTrue(storeA.degraded() && storeB.degraded());

        List<String> startedOnB = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService client = Executors.newSingleThreadExecutor();
        try {
            Future<?> starting = client.submit(() -> {
                for (int i = 0; !stop.get(); i++) {
                    b.route("m", "fresh-" + i, List.of(w1));
                    startedOnB.add("fresh-" + i);
                    LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(300));
                }
            });
            redis.restart();
            eventually("both recovered", () -> !storeA.degraded() && !storeB.degraded());
            stop.set(true);
            starting.get(30, TimeUnit.SECONDS);
        } finally {
            client.shutdownNow();
        }
        List<String> ids = new ArrayList<>(startedOnB);
        Collections.reverse(ids);
        ids.add(0, "s");
        for (String id : ids) {
            Worker onA = a.route("m", id, both).worker();
            assertEquals(onA, b.route("m", id, both).worker(), id + " goes to the same worker from either replica");
        }
    }

    /**
     * A replica recovering from a stalled Redis keeps sending the sessions it knows where Redis has them, also
     * while it reconciles (its cached bindings may have missed invalidations and are checked against Redis).
     */
    @Test
    void aRecoveringReplicaKeepsKnownSessionsWhereRedisHasThem() throws Exception {
        RedisSessionStore storeB = replica();
        SessionTable b = storeB.table("default");
        Worker w0 = workers.get(0);
        Worker w1 = workers.get(1);
        List<Worker> both = List.of(w0, w1);
        List<String> known = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            known.add("known-" + i);
            assertEquals(w0, b.route("m", "known-" + i, List.of(w0)).worker());
        }
        storeB.syncNow();
        redis.pause();
        List<String> elsewhere = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService client = Executors.newSingleThreadExecutor();
        try {
            b.route("m", "probe", List.of(w1));
            assertTrue(storeB.degraded());
            Future<?> turns = client.submit(() -> {
                while (!stop.get()) {
                    for (String id : known) {
                        Worker w = b.route("m", id, both).worker();
                        if (!w.equals(w0) && elsewhere.size() < 5) {
                            elsewhere.add(id + " -> " + w.url());
                        }
                    }
                }
            });
            redis.resume();
            eventually("b recovered", () -> !storeB.degraded());
            stop.set(true);
            turns.get(30, TimeUnit.SECONDS);
        } finally {
            redis.resume();
            client.shutdownNow();
        }
        assertEquals(List.of(), elsewhere, "turns of known sessions sent away from their stored worker");
    }
}
