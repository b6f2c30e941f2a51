package org.vllmrouter.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.policy.StickyBalancedPolicy;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.SessionTable.Outcome;
import org.vllmrouter.core.session.SessionTableContract;
import org.vllmrouter.core.worker.Worker;

/**
 * Two or three stores on one real Redis act as router replicas; the clock is shared and moved by hand. Each
 * subclass runs these on one kind of deployment (a single server, a cluster) and adds what is its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class SessionTableOnRedisTests {
    static final Duration TTL = Duration.ofSeconds(60);
    TestRedis redis;

    final AtomicLong clock = new AtomicLong(1_700_000_000_000L);
    final List<RedisSessionStore> stores = new ArrayList<>();
    final List<Worker> workers = new ArrayList<>();

    abstract TestRedis startRedis() throws Exception;

    @BeforeAll
    void start() throws Exception {
        redis = startRedis();
    }

    @AfterAll
    void stop() throws Exception {
        redis.close();
    }

    @BeforeEach
    void setUp() throws Exception {
        redis.flushAll();
        for (int i = 0; i < 4; i++) {
            workers.add(Worker.builder("http://w" + i + ":8000").build());
        }
    }

    @AfterEach
    void closeStores() {
        stores.forEach(RedisSessionStore::close);
        stores.clear();
        workers.clear();
    }

    RedisSessionStore replica() throws SessionStoreException {
        RedisSessionStore store = RedisSessionStore.open(redis.url(), TTL, clock::get);
        stores.add(store);
        return store;
    }

    /** Polls; the bound only stops a broken test, it is not a time the test needs. */
    static void eventually(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("never happened: " + what);
            }
            Thread.sleep(5);
        }
    }

    /**
     * The contract every session table keeps, on this deployment: one replica against the reference model. Its
     * background work (writing last uses back, refreshing counts) runs before every comparison, as about a second
     * of real time would.
     */
    @Nested
    class Contract extends SessionTableContract {
        private RedisSessionStore store;

        @Override
        protected SessionTable newTable(Duration ttl, LongSupplier clockMillis) throws Exception {
            store = RedisSessionStore.open(redis.url(), ttl, clockMillis);
            stores.add(store);
            return store.table("contract");
        }

        @Override
        protected boolean countsPerPool() {
            return true;
        }

        @Override
        protected long sweepLagMillis() {
            return RedisSessionTable.SWEEP_GRACE_MILLIS;
        }

        @Override
        protected void settle(SessionTable table) throws Exception {
            store.syncNow();
        }

        @Override
        protected void checkStructure(SessionTable table) throws Exception {
            RedisTableStructure.check(store, (RedisSessionTable) table, "contract");
        }
    }

    @Test
    void aSessionStaysOnItsWorkerOnEveryReplicaAndFinishingOnOneReleasesItEverywhere() throws Exception {
        SessionTable a = replica().table("default");
        SessionTable b = replica().table("default");
        SessionTable.Assignment first = a.route("m", "traj-1", workers);
        assertEquals(Outcome.STARTED, first.outcome());
        assertEquals(1, first.activeOnWorker());
        SessionTable.Assignment onB = b.route("m", "traj-1", workers);
        assertEquals(Outcome.EXISTING, onB.outcome());
        assertSame(first.worker(), onB.worker());
        assertEquals(Outcome.EXISTING, a.route("m", "traj-1", workers).outcome());

        assertEquals(1, b.release("traj-1"));
        assertEquals(0, a.release("traj-1"), "released everywhere already");
        SessionStats stats = a.stats();
        assertEquals(0, stats.activeSessions());
        assertEquals(Map.of(), stats.activeByWorker());
        assertEquals(1, stats.started());
        assertEquals(1, stats.released());
        assertEquals(Outcome.STARTED, b.route("m", "traj-1", workers).outcome(), "a finished id may start again");
    }

    @Test
    void newSessionsSpreadOverTheGloballyLeastLoadedWorkers() throws Exception {
        List<SessionTable> replicas = List.of(replica().table("default"), replica().table("default"),
                replica().table("default"));
        for (int i = 0; i < 40; i++) {
            replicas.get(i % 3).route("m", "s" + i, workers);
        }
        SessionStats stats = replicas.get(2).stats();
        assertEquals(40, stats.activeSessions());
        assertEquals(Map.of("http://w0:8000", 10, "http://w1:8000", 10, "http://w2:8000", 10, "http://w3:8000", 10),
                stats.activeByWorker());
        assertEquals(workers, replicas.get(2).leastLoaded(workers), "counts as last seen: every worker holds 10");
    }

    @Test
    void theTieBreakIsTheRendezvousOrderOfTheInMemoryTable() throws Exception {
        SessionTable shared = replica().table("default");
        SessionTable memory = new org.vllmrouter.core.session.InMemorySessionTable(TTL, System::nanoTime);
        for (int i = 0; i < 50; i++) {
            String id = "tie-" + i;
            assertEquals(memory.route("m", id, workers).worker().url(), shared.route("m", id, workers).worker().url(), id);
            memory.release(id);
            shared.release(id);
        }
    }

    @Test
    void aKnownSessionIsRoutedWithoutTheStore() throws Exception {
        RedisSessionStore store = replica();
        SessionTable table = store.table("default");
        Worker w = table.route("m", "cached", workers).worker();
        redis.pause();
        try {
            for (int i = 0; i < 100; i++) {
                SessionTable.Assignment again = table.route("m", "cached", workers);
                assertEquals(Outcome.EXISTING, again.outcome());
                assertSame(w, again.worker());
            }
            assertFalse(store.degraded(), "no request of a known session waited for the store");
        } finally {
            redis.resume();
        }
    }

    @Test
    void aBindingChangedByAnotherReplicaIsNotServedFromTheCache() throws Exception {
        RedisSessionTable a = (RedisSessionTable) replica().table("default");
        SessionTable b = replica().table("default");
        Worker first = a.route("m", "moving", workers).worker();
        List<Worker> withoutFirst = new ArrayList<>(workers);
        withoutFirst.remove(first);
        SessionTable.Assignment moved = b.route("m", "moving", withoutFirst);
        assertEquals(Outcome.REBOUND, moved.outcome());
        eventually("a hears that b moved the session", () -> a.cachedWorker("m", "moving") == null);
        SessionTable.Assignment onA = a.route("m", "moving", workers);
        assertEquals(Outcome.EXISTING, onA.outcome());
        assertSame(moved.worker(), onA.worker());
        assertEquals(1, a.stats().activeSessions());
    }

    @Test
    void idleExpiryIsGlobalAndCountedOnce() throws Exception {
        SessionTable a = replica().table("default");
        SessionTable b = replica().table("default");
        a.route("m", "idle", workers);
        a.route("m", "busy", workers);
        clock.addAndGet(TTL.toMillis() / 2);
        b.route("m", "busy", workers);
        clock.addAndGet(TTL.toMillis() / 2);
        assertEquals(Outcome.REBOUND, b.route("m", "idle", workers).outcome(),
                "idle for the TTL: re-bound on revisit before any sweep");
        assertEquals(Outcome.EXISTING, a.route("m", "busy", workers).outcome(), "used on b within the TTL");
        clock.addAndGet(TTL.toMillis() + RedisSessionTable.SWEEP_GRACE_MILLIS);
        assertEquals(2, a.expireIdle(100) + b.expireIdle(100));
        assertEquals(0, a.expireIdle(100) + b.expireIdle(100), "nothing is expired twice");
        SessionStats stats = b.stats();
        assertEquals(0, stats.activeSessions());
        assertEquals(2, stats.expired());
        assertEquals(1, stats.rebound());
        assertEquals(stats.started() - stats.released() - stats.expired(), stats.activeSessions());
    }

    @Test
    void lastUsesReachTheStoreSoASweepSparesASessionUsedOnlyFromTheCache() throws Exception {
        RedisSessionStore storeA = replica();
        SessionTable a = storeA.table("default");
        SessionTable b = replica().table("default");
        a.route("m", "warm", workers);
        clock.addAndGet(TTL.toMillis() - 1000);
        assertEquals(Outcome.EXISTING, a.route("m", "warm", workers).outcome());
        String idle = Keys.pool("default", "m").idle();
        String expected = Long.toString(clock.get());
        eventually("the last use is written back", () -> {
            try {
                return redis.cli("ZSCORE", idle, "warm").equals(expected);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        clock.addAndGet(TTL.toMillis() / 2);
        assertEquals(0, b.expireIdle(100));
        assertEquals(Outcome.EXISTING, b.route("m", "warm", workers).outcome());
    }

    @Test
    void poolsAndScopesAreSeparateSessions() throws Exception {
        RedisSessionStore store = replica();
        SessionTable prefill = store.table("prefill");
        SessionTable decode = store.table("decode");
        prefill.route("m1", "x", workers);
        prefill.route("m2", "x", workers);
        decode.route("m1", "x", workers);
        assertEquals(2, prefill.stats().activeSessions());
        assertEquals(1, decode.stats().activeSessions());
        assertEquals(2, replica().table("prefill").release("x"), "every pool of the scope, seen from another replica");
        assertEquals(1, decode.stats().activeSessions());
    }

    @Test
    void aRestartedRouterKeepsEveryBinding() throws Exception {
        RedisSessionStore before = RedisSessionStore.open(redis.url(), TTL, clock::get);
        Map<String, String> bound = new java.util.HashMap<>();
        for (int i = 0; i < 20; i++) {
            bound.put("s" + i, before.table("default").route("m", "s" + i, workers).worker().url());
        }
        before.close();
        SessionTable after = replica().table("default");
        for (Map.Entry<String, String> e : bound.entrySet()) {
            SessionTable.Assignment a = after.route("m", e.getKey(), workers);
            assertEquals(Outcome.EXISTING, a.outcome(), e.getKey());
            assertEquals(e.getValue(), a.worker().url(), e.getKey());
        }
        assertEquals(20, after.stats().activeSessions());
    }

    @Test
    void keysOfTheWrongTypeAreTreatedAsAbsent() throws Exception {
        Keys.Pool keys = Keys.pool("default", "m");
        redis.cli("RPUSH", keys.binding("odd"), "x");
        redis.cli("SET", keys.counts(), "not a hash");
        SessionTable table = replica().table("default");
        SessionTable.Assignment a = table.route("m", "odd", workers);
        assertEquals(Outcome.STARTED, a.outcome());
        assertEquals(1, a.activeOnWorker());
        assertEquals("string", redis.cli("TYPE", keys.binding("odd")));
        assertEquals(1, table.stats().activeSessions());
    }

    /**
     * sticky_balanced over a shared store: the store keeps choosing new bindings (fewest sessions) and keeps no
     * weights, and the policy's contract holds on every replica: a session stays where the store bound it, a finish
     * on one replica releases it everywhere.
     */
    @Test
    void stickyBalancedKeepsItsContractOnASharedStore() throws Exception {
        SessionTable table = replica().table("default");
        assertFalse(table.placesByPolicy());
        StickyBalancedPolicy a = new StickyBalancedPolicy(table, StickyBalancedPolicy.Settings.DEFAULTS);
        StickyBalancedPolicy b = new StickyBalancedPolicy(replica().table("default"),
                StickyBalancedPolicy.Settings.DEFAULTS);
        RoutingRequest turn = RoutingRequest.of("task_0", "m", "x".repeat(4_000));
        Worker bound = a.select(workers, turn);
        assertSame(bound, a.select(workers, turn));
        assertEquals(bound.url(), b.select(workers, turn).url());
        b.finishSession("task_0");
        assertEquals(0, a.sessionStats().activeSessions());
    }
}
