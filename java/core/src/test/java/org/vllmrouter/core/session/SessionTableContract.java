package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;
import java.util.random.RandomGeneratorFactory;
import java.util.stream.LongStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.vllmrouter.core.worker.Worker;

/**
 * The contract of every {@link SessionTable}, run on each implementation: seeded random sequences of operations
 * (routing a known or a new id, releasing, time passing with a sweep, a worker turning unhealthy or healthy, a worker
 * removed or added) applied to the table and to {@link ReferenceSessionTable}; after every step the answers, the
 * counters and the least-loaded set must be the model's, and the table's own structure must hold
 * ({@link #checkStructure}). A failure names its seed; {@code -Dsession.contract.seed=N} replays that one sequence.
 *
 * <p>Not compared: {@link SessionTable.Assignment#activeOnWorker()}, which a shared store reports for the session's
 * pool (its keys live together) and the in-memory table across pools. Expiry is compared after full sweeps: which
 * sessions a bounded sweep takes first, and whether a route drops expired sessions on its way, is each table's own
 * business (its own tests pin it down).
 */
public abstract class SessionTableContract {
    /** Time moves in whole units and the TTL is half a unit off them, so no session is ever idle for just the TTL. */
    static final long CLOCK_UNIT_MILLIS = 5_000;
    static final Duration TTL = Duration.ofMillis(12 * CLOCK_UNIT_MILLIS + CLOCK_UNIT_MILLIS / 2);
    private static final String SEED_PROPERTY = "session.contract.seed";
    private static final int STEPS = 300;
    private static final String[] POOLS = {"", "m1", "m2"};
    /** Ids that must stay distinct: case, spaces, the separators of a store's keys, equal String hashes. */
    private static final String[] ODD_IDS = {"s", "S", "s ", "s:1", "{s}", "s|m1", "s%7B", "ü", "AaBB", "BBAa", "BBBB"};

    /** A new, empty table with {@link #TTL} on {@code clockMillis}. */
    protected abstract SessionTable newTable(Duration ttl, LongSupplier clockMillis) throws Exception;

    /** Throws when the table's own structure is broken (indexes that disagree, counts that are not their sessions). */
    protected abstract void checkStructure(SessionTable table) throws Exception;

    /**
     * How long past its TTL the table's sweep may keep a session (less than half a clock unit): the suite never
     * compares within it.
     */
    protected long sweepLagMillis() {
        return 0;
    }

    /**
     * Whether a new binding goes to the candidate with the fewest sessions of the session's pool rather than of all
     * pools: a shared store counts each pool apart (its keys share one hash slot, and its script sees only those).
     */
    protected boolean countsPerPool() {
        return false;
    }

    /** Lets the table's background work catch up, as real time passing would; before counters are compared. */
    protected void settle(SessionTable table) throws Exception {
    }

    static LongStream seeds() {
        String replay = System.getProperty(SEED_PROPERTY);
        return replay != null ? LongStream.of(Long.decode(replay)) : LongStream.of(0x5e55_0001L, 0x5e55_0002L,
                0x5e55_0003L, 0x5e55_0004L, 0x5e55_0005L);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void behavesLikeTheReferenceModel(long seed) throws Exception {
        assertTrue(sweepLagMillis() < CLOCK_UNIT_MILLIS / 2, "the suite's clock steps cannot hide this sweep lag");
        new Run(seed).steps();
    }

    /** One sequence: the table, the model and the workers, driven by one seeded generator. */
    private final class Run {
        final long seed;
        final RandomGenerator random;
        final AtomicLong clock = new AtomicLong(1_700_000_000_000L);
        final ReferenceSessionTable model = new ReferenceSessionTable(TTL.toMillis(), clock::get, countsPerPool());
        final List<Worker> workers = new ArrayList<>();
        final List<Worker> unhealthy = new ArrayList<>();
        int nextWorker;
        int nextId;
        /** What the current step does, for the failure message. */
        String doing = "new table";

        Run(long seed) {
            this.seed = seed;
            this.random = RandomGeneratorFactory.of("L64X128MixRandom").create(seed);
            for (int i = 0; i < 4; i++) {
                addWorker();
            }
        }

        void steps() throws Exception {
            SessionTable table = newTable(TTL, clock::get);
            for (int step = 0; step < STEPS; step++) {
                try {
                    step(table);
                    check(table);
                } catch (Throwable t) {
                    String where = "seed " + seed + " (replay: -D" + SEED_PROPERTY + "=" + seed + "), step " + step
                            + ": " + doing;
                    System.err.println("Session table contract failed at " + where);
                    throw new AssertionError(where + ": " + t.getMessage(), t);
                }
            }
        }

        /** One random operation on both. */
        void step(SessionTable table) throws Exception {
            int r = random.nextInt(100);
            if (r < 40) {
                route(table, knownOrNewKey());
            } else if (r < 55) {
                route(table, new ReferenceSessionTable.Key(pool(), newId()));
            } else if (r < 67) {
                String id = random.nextInt(4) == 0 ? newId() : knownOrNewKey().sessionId();
                boolean twice = random.nextInt(3) == 0;
                doing = "release '" + id + "'" + (twice ? " twice" : "");
                assertEquals(model.release(id), table.release(id), "sessions released");
                if (twice) {
                    assertEquals(model.release(id), table.release(id), "sessions released again");
                }
            } else if (r < 77) {
                long units = 1 + random.nextInt(6);
                int batch = 1 + random.nextInt(8);
                doing = units + " clock units pass, then a sweep in batches of " + batch;
                settle(table);
                clock.addAndGet(units * CLOCK_UNIT_MILLIS);
                assertEquals(model.expireIdle(Integer.MAX_VALUE), sweep(table, batch), "sessions expired");
            } else if (r < 89) {
                Worker w = workers.get(random.nextInt(workers.size()));
                if (unhealthy.remove(w)) {
                    doing = w.url() + " healthy again";
                } else {
                    doing = w.url() + " unhealthy";
                    unhealthy.add(w);
                    keepOneHealthy();
                }
            } else if (r < 95 && workers.size() > 2) {
                Worker w = workers.remove(random.nextInt(workers.size()));
                doing = w.url() + " removed";
                unhealthy.remove(w);
                keepOneHealthy();
            } else {
                doing = addWorker().url() + " added";
            }
        }

        void route(SessionTable table, ReferenceSessionTable.Key key) {
            List<Worker> candidates = candidates();
            doing = "route '" + key.sessionId() + "' in pool '" + key.pool() + "' over " + urls(candidates);
            SessionTable.Assignment expected = model.route(key.pool(), key.sessionId(), candidates);
            SessionTable.Assignment actual = table.route(key.pool(), key.sessionId(), candidates);
            assertTrue(candidates.stream().anyMatch(w -> w == actual.worker()), "the worker is one of the candidates");
            assertEquals(expected.worker().url(), actual.worker().url(), "worker");
            assertEquals(expected.outcome(), actual.outcome(), "outcome");
            assertTrue(actual.activeOnWorker() >= 1, "the chosen worker holds this session");
        }

        /** Sweeps in batches until nothing is due; every batch takes at most its size. */
        int sweep(SessionTable table, int batch) {
            int total = 0;
            for (int n = batch; n == batch; total += n) {
                n = table.expireIdle(batch);
                assertTrue(n >= 0 && n <= batch, "a sweep of " + batch + " dropped " + n);
            }
            return total;
        }

        void check(SessionTable table) throws Exception {
            settle(table);
            SessionStats expected = model.stats();
            SessionStats actual = table.stats();
            assertEquals(expected.activeByWorker(), actual.activeByWorker(), "sessions per worker");
            assertEquals(expected.activeSessions(), actual.activeSessions(), "active sessions");
            assertEquals(List.of(expected.started(), expected.released(), expected.expired(), expected.evicted(),
                    expected.rebound()), List.of(actual.started(), actual.released(), actual.expired(),
                    actual.evicted(), actual.rebound()), "started, released, expired, evicted, rebound");
            List<Worker> candidates = candidates();
            assertEquals(urls(model.leastLoaded(candidates)), urls(table.leastLoaded(candidates)), "least loaded");
            checkStructure(table);
        }

        /** The healthy workers, in their order. */
        List<Worker> candidates() {
            List<Worker> healthy = new ArrayList<>(workers);
            healthy.removeAll(unhealthy);
            return healthy;
        }

        /** A request always has a candidate: when every worker is unhealthy, the oldest one recovers. */
        void keepOneHealthy() {
            if (unhealthy.size() == workers.size()) {
                unhealthy.remove(workers.get(0));
            }
        }

        ReferenceSessionTable.Key knownOrNewKey() {
            List<ReferenceSessionTable.Key> known = List.copyOf(model.bindings().keySet());
            if (known.isEmpty() || random.nextInt(5) == 0) {
                return new ReferenceSessionTable.Key(pool(), random.nextBoolean()
                        ? ODD_IDS[random.nextInt(ODD_IDS.length)] : "s" + random.nextInt(30));
            }
            return known.stream().sorted((a, b) -> (a.pool() + "\n" + a.sessionId())
                    .compareTo(b.pool() + "\n" + b.sessionId())).toList().get(random.nextInt(known.size()));
        }

        String pool() {
            return POOLS[random.nextInt(POOLS.length)];
        }

        String newId() {
            return "new-" + nextId++;
        }

        Worker addWorker() {
            Worker w = Worker.builder("http://w" + nextWorker++ + ":8000").build();
            workers.add(w);
            return w;
        }

        List<String> urls(List<Worker> ws) {
            return ws.stream().map(Worker::url).toList();
        }
    }
}
