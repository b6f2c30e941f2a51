package org.vllmrouter.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.worker.Worker;

/**
 * Three replicas on one store under a storm: threads route turns of their sessions through a random replica with
 * random worker subsets (health flips), finish sessions, and at each quiescent point the clock jumps and a random
 * replica sweeps. Every turn of a live session whose worker is a candidate lands on that worker whichever replica
 * routes it; the store's counts always add up, never go negative, and after a full sweep equal the sessions
 * still live. Each thread's sessions are in a pool of their own; on a cluster the pools live on different primaries.
 */
class ReplicaStormTest {
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final int THREADS = 6;
    private static final int ROUNDS = 8;
    private static final int OPS_PER_ROUND = 120;
    private static final int SESSIONS_PER_THREAD = 25;

    private record Bound(String url, long lastUse) {
    }

    private final AtomicLong clock = new AtomicLong(1_700_000_000_000L);
    private final List<RedisSessionStore> stores = new ArrayList<>();
    private final List<Worker> workers = new ArrayList<>();
    private TestRedis redis;
    private List<String> pools;

    @BeforeEach
    void setUp() {
        for (int i = 0; i < 4; i++) {
            workers.add(Worker.builder("http://w" + i + ":8000").build());
        }
    }

    private void startRedis(String deployment) throws Exception {
        if (deployment.equals("cluster")) {
            RedisCluster cluster = RedisCluster.start(3);
            redis = cluster;
            pools = cluster.poolsOnEveryNode("default");
        } else {
            redis = RedisServer.start();
            pools = List.of("m0", "m1", "m2");
        }
        for (int i = 0; i < 3; i++) {
            stores.add(RedisSessionStore.open(redis.url(), TTL, clock::get));
        }
    }

    @AfterEach
    void tearDown() throws Exception {
        stores.forEach(RedisSessionStore::close);
        if (redis != null) {
            redis.close();
        }
    }

    @ParameterizedTest(name = "on {0}")
    @ValueSource(strings = {"one server", "cluster"})
    void stickinessAndConservationHoldAcrossReplicas(String deployment) throws Exception {
        startRedis(deployment);
        List<SessionTable> replicas = stores.stream().map(s -> s.table("default")).toList();
        Map<String, Bound> model = new ConcurrentHashMap<>();
        CyclicBarrier quiescent = new CyclicBarrier(THREADS + 1);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                String sessionPool = pools.get(t % pools.size());
                SplittableRandom random = new SplittableRandom(0x5707L + t);
                done.add(pool.submit(() -> {
                    try {
                        for (int round = 0; round < ROUNDS; round++) {
                            for (int i = 0; i < OPS_PER_ROUND; i++) {
                                step(random, replicas, model, sessionPool, "t" + thread + "-s" + random.nextInt(SESSIONS_PER_THREAD));
                            }
                            quiescent.await(60, TimeUnit.SECONDS);
                            quiescent.await(60, TimeUnit.SECONDS);
                        }
                    } catch (Throwable failed) {
                        quiescent.reset();
                        throw failed;
                    }
                    return null;
                }));
            }
            try {
                quiesceAndSweep(replicas, model, quiescent);
            } catch (BrokenBarrierException e) {
                for (Future<?> f : done) {
                    if (f.isDone()) {
                        f.get();
                    }
                }
                throw e;
            }
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (String id : new ArrayList<>(model.keySet())) {
            assertEquals(1, replicas.get(Math.abs(id.hashCode()) % 3).release(id), id);
        }
        SessionStats end = replicas.get(0).stats();
        assertEquals(0, end.activeSessions(), end.toString());
        assertEquals(Map.of(), end.activeByWorker());
    }

    /** At each quiescent point: check, write last uses back, jump the clock, sweep, check exact counts. */
    private void quiesceAndSweep(List<SessionTable> replicas, Map<String, Bound> model, CyclicBarrier quiescent)
            throws Exception {
            SplittableRandom random = new SplittableRandom(0xc10cL);
            for (int round = 0; round < ROUNDS; round++) {
                quiescent.await(120, TimeUnit.SECONDS);
                String where = "round " + round;
                check(replicas.get(round % 3).stats(), model, where);
                for (RedisSessionStore store : stores) {
                    store.syncNow();
                }
                clock.addAndGet(random.nextLong(TTL.toMillis()));
                replicas.get(random.nextInt(3)).expireIdle(Integer.MAX_VALUE);
                long now = clock.get();
                long sweptBefore = now - TTL.toMillis() - RedisSessionTable.SWEEP_GRACE_MILLIS;
                model.values().removeIf(b -> b.lastUse() <= sweptBefore);
                SessionStats swept = replicas.get(random.nextInt(3)).stats();
                check(swept, model, where + " after the sweep");
                assertEquals(model.size(), swept.activeSessions(), where + ": sessions not yet swept " + swept);
                assertEquals(perWorker(model), swept.activeByWorker(), where);
                quiescent.await(120, TimeUnit.SECONDS);
            }
    }

    private void step(SplittableRandom random, List<SessionTable> replicas, Map<String, Bound> model, String pool,
                      String id) {
        SessionTable replica = replicas.get(random.nextInt(replicas.size()));
        if (random.nextInt(100) < 15) {
            replica.release(id);
            model.remove(id);
            invalidated(replicas, pool, id, null);
            return;
        }
        List<Worker> candidates = new ArrayList<>();
        for (Worker w : workers) {
            if (random.nextInt(10) < 8) {
                candidates.add(w);
            }
        }
        if (candidates.isEmpty()) {
            candidates.add(workers.get(random.nextInt(workers.size())));
        }
        long now = clock.get();
        Bound before = model.get(id);
        SessionTable.Assignment a = replica.route(pool, id, candidates);
        assertTrue(candidates.contains(a.worker()), id);
        boolean live = before != null && now - before.lastUse() < TTL.toMillis();
        boolean stillCandidate = before != null && candidates.stream().anyMatch(w -> w.url().equals(before.url()));
        if (live && stillCandidate) {
            assertEquals(before.url(), a.worker().url(), "sticky across replicas: " + id);
            assertEquals(SessionTable.Outcome.EXISTING, a.outcome(), id);
        } else {
            assertNotEquals(SessionTable.Outcome.EXISTING, a.outcome(), id);
        }
        model.put(id, new Bound(a.worker().url(), now));
        if (a.outcome() != SessionTable.Outcome.EXISTING) {
            invalidated(replicas, pool, id, a.worker().url());
        }
    }

    /**
     * The next turn of a session comes after its invalidation reached the other replicas (one hop from the store;
     * a turn of an LLM session takes far longer), so no replica may still hold another binding of it.
     */
    private static void invalidated(List<SessionTable> replicas, String pool, String id, String url) {
        try {
            SessionTableOnRedisTests.eventually("every replica forgot the old binding of " + id, () -> replicas.stream()
                    .map(r -> ((RedisSessionTable) r).cachedWorker(pool, id))
                    .allMatch(cached -> cached == null || cached.equals(url)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static Map<String, Integer> perWorker(Map<String, Bound> model) {
        Map<String, Integer> out = new HashMap<>();
        model.values().forEach(b -> out.merge(b.url(), 1, Integer::sum));
        return out;
    }

    private static void check(SessionStats s, Map<String, Bound> model, String where) {
        int sum = s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum();
        assertEquals(s.activeSessions(), sum, "conservation " + where + " " + s);
        assertTrue(s.activeByWorker().values().stream().allMatch(n -> n > 0), "positive counts " + where + " " + s);
        assertEquals(s.started() - s.released() - s.expired(), s.activeSessions(), "lifetime counters " + where);
        assertEquals(model.size(), s.activeSessions(), "tracked sessions " + where + " " + s);
    }
}
