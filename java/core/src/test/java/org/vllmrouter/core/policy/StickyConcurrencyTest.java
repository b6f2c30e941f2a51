package org.vllmrouter.core.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.vllmrouter.core.session.InMemorySessionTable;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;

/**
 * Threads race routes, releases, clock jumps, expiry drains, health flips and worker removal/re-adding
 * against one policy; at each quiescent point (all threads parked on a barrier) the counters must be
 * conserved and positive.
 */
class StickyConcurrencyTest {
    private static final int THREADS = 6;
    private static final int ROUNDS = 15;
    private static final int OPS_PER_ROUND = 400;

    @RepeatedTest(4)
    void countsStayConservedUnderConcurrentMix(RepetitionInfo rep) throws Exception {
        run(0xc0c0L * rep.getCurrentRepetition(), InMemorySessionTable.DEFAULT_MAX_SESSIONS);
    }

    /** The same with a table that holds a tenth of the ids in play, so evictions race everything else. */
    @RepeatedTest(4)
    void countsStayConservedWhileAFullTableEvicts(RepetitionInfo rep) throws Exception {
        run(0xe0e0L * rep.getCurrentRepetition(), 40);
    }

    private static void run(long seed, int maxSessions) throws Exception {
        AtomicLong clock = new AtomicLong();
        StickyLeastLoadedPolicy policy = new StickyLeastLoadedPolicy(
                new InMemorySessionTable(Duration.ofSeconds(30), maxSessions, clock::get));
        WorkerRegistry registry = new WorkerRegistry();
        List<String> urls = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            urls.add("http://w" + i + ":8000");
            registry.add(Worker.builder(urls.get(i)).build());
        }
        Set<String> ids = ConcurrentHashMap.newKeySet();
        CyclicBarrier quiescent = new CyclicBarrier(THREADS + 1);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                SplittableRandom random = new SplittableRandom(seed + t);
                done.add(pool.submit(() -> {
                    for (int round = 0; round < ROUNDS; round++) {
                        for (int i = 0; i < OPS_PER_ROUND; i++) {
                            step(random, policy, registry, urls, clock, ids);
                        }
                        quiescent.await(30, TimeUnit.SECONDS);
                        quiescent.await(30, TimeUnit.SECONDS);
                    }
                    return null;
                }));
            }
            for (int round = 0; round < ROUNDS; round++) {
                quiescent.await(60, TimeUnit.SECONDS);
                SessionStats s = policy.sessionStats();
                String where = "seed=" + seed + " round=" + round + " " + s;
                assertEquals(s.activeSessions(), s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum(), where);
                assertTrue(s.activeByWorker().values().stream().allMatch(n -> n > 0), where);
                assertEquals(s.started() - s.released() - s.expired() - s.evicted(), s.activeSessions(), where);
                assertTrue(s.activeSessions() <= Math.min(ids.size() * 2L, maxSessions), where);
                quiescent.await(60, TimeUnit.SECONDS);
            }
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (String id : ids) {
            policy.finishSession(id);
        }
        SessionStats end = policy.sessionStats();
        assertEquals(0, end.activeSessions(), "every session released: " + end);
        assertTrue(end.activeByWorker().isEmpty(), end.toString());
    }

    private static void step(SplittableRandom random, StickyLeastLoadedPolicy policy, WorkerRegistry registry,
                             List<String> urls, AtomicLong clock, Set<String> ids) {
        int op = random.nextInt(100);
        String id = "s" + random.nextInt(200);
        if (op < 70) {
            String model = random.nextBoolean() ? null : "m";
            List<Worker> candidates = registry.candidates(null, WorkerRole.REGULAR);
            ids.add(id);
            Worker w = policy.select(candidates, RoutingRequest.of(id, model, ""));
            assertTrue(candidates.isEmpty() ? w == null : candidates.contains(w));
        } else if (op < 82) {
            policy.finishSession(id);
        } else if (op < 88) {
            clock.addAndGet(Duration.ofSeconds(1 + random.nextInt(5)).toNanos());
        } else if (op < 92) {
            policy.expireIdle(1 + random.nextInt(8));
        } else if (op < 97) {
            registry.get(urls.get(random.nextInt(urls.size()))).ifPresent(w -> w.setHealthy(!w.isHealthy()));
        } else {
            String url = urls.get(random.nextInt(urls.size()));
            if (registry.removeByBaseUrl(url).isEmpty()) {
                registry.add(Worker.builder(url).build());
            }
        }
    }
}
