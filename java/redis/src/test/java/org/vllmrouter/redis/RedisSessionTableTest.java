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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.SessionTable.Outcome;
import org.vllmrouter.core.worker.Worker;

/** Two or three stores on one real redis-server act as router replicas; the clock is shared and moved by hand. */
class RedisSessionTableTest {
    private static final Duration TTL = Duration.ofSeconds(60);
    private static RedisServer redis;

    private final AtomicLong clock = new AtomicLong(1_700_000_000_000L);
    private final List<RedisSessionStore> stores = new ArrayList<>();
    private final List<Worker> workers = new ArrayList<>();

    @BeforeAll
    static void startRedis() throws Exception {
        redis = RedisServer.start();
    }

    @AfterAll
    static void stopRedis() throws Exception {
        redis.close();
    }

    @BeforeEach
    void setUp() throws Exception {
        redis.cli("FLUSHALL");
        for (int i = 0; i < 4; i++) {
            workers.add(Worker.builder("http://w" + i + ":8000").build());
        }
    }

    @AfterEach
    void closeStores() {
        stores.forEach(RedisSessionStore::close);
    }

    private RedisSessionStore replica() throws SessionStoreException {
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

    @Test
    void unreachableStoreWrongPasswordAndBadVersionAreOneLineErrors() throws Exception {
        int closedPort = RedisServer.freePort();
        SessionStoreException unreachable = assertThrows(SessionStoreException.class,
                () -> RedisSessionStore.open("redis://:pw@127.0.0.1:" + closedPort, TTL, clock::get));
        assertTrue(unreachable.getMessage().startsWith("Session store redis://***@127.0.0.1:" + closedPort + ": "),
                unreachable.getMessage());
        assertTrue(unreachable.getMessage().contains("Connection refused"), unreachable.getMessage());
        assertFalse(unreachable.getMessage().contains("\n"));

        try (RedisServer guarded = RedisServer.start("--requirepass", "right")) {
            SessionStoreException wrong = assertThrows(SessionStoreException.class,
                    () -> RedisSessionStore.open("redis://:wrong@127.0.0.1:" + guarded.port(), TTL, clock::get));
            assertTrue(wrong.getMessage().contains("WRONGPASS"), wrong.getMessage());
            assertFalse(wrong.getMessage().contains("wrong@"), wrong.getMessage());
            RedisSessionStore right = RedisSessionStore.open("redis://:right@127.0.0.1:" + guarded.port() + "/3",
                    TTL, clock::get);
            try {
                assertNotEquals(null, right.table("default").route("m", "s", workers).worker());
                assertEquals("1", guarded.cli("-a", "right", "-n", "3", "--no-auth-warning", "EXISTS",
                        Keys.pool("default", "m").binding("s")));
            } finally {
                right.close();
            }
        }
    }

    @Test
    void aRedisClusterNodeIsRefusedAtStartWithOneLine() throws Exception {
        try (RedisServer node = RedisServer.start("--cluster-enabled", "yes")) {
            SessionStoreException e = assertThrows(SessionStoreException.class,
                    () -> RedisSessionStore.open(node.url(), TTL, clock::get));
            assertEquals("Session store " + node.url() + ": the server is a Redis Cluster node, and this router's "
                    + "store speaks to one Redis server; give a standalone Redis (or a Sentinel-managed primary)",
                    e.getMessage());
        }
    }
}
