package org.vllmrouter.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.vllmrouter.core.policy.LiveLoad;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.policy.StickyBalancedPolicy;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.HeaderLookup;
import org.vllmrouter.core.session.InMemorySessionTable;
import org.vllmrouter.core.worker.Worker;

/**
 * sticky_balanced select with 64 workers and 100k tracked sessions in SkyRL's id shape ({@code instance_repetition},
 * 16 to a group): a later turn of a tracked session, and a new session of an existing group that is placed (loads of
 * every candidate, the group's worker, the margin), reserved and released again, so the table keeps its size. Each
 * call is ended as the proxy ends it, so in-flight counts stay level.
 *
 * <p>A later turn comes two ways: {@code trackedSession} reuses the request objects made at set-up (their ids' hashes
 * cached, each a cache miss away), {@code trackedSessionFreshId} builds the id and the request anew, as the proxy does
 * from each body. The {@code floor} benchmarks time what no session table can avoid, in the same run: building the
 * fresh id and request alone, and finding one of the 100k ids in a {@link HashMap} (fresh, or the set-up object).
 * {@code live}: no engine samples (a known turn never weighs a move), or every engine under KV pressure (each known
 * turn weighs its worker's load against the least seen).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class StickyBalancedSelectBenchmark {
    private static final int SAMPLES_PER_GROUP = 16;

    @Param("100000")
    public int sessions;

    @Param("64")
    public int workerCount;

    @Param({"none", "pressured"})
    public String live;

    List<Worker> workers;
    StickyBalancedPolicy policy;
    RoutingRequest[] tracked;

    @Setup(Level.Trial)
    public void setUp() {
        java.util.logging.Logger.getLogger(StickyBalancedPolicy.class.getName())
                .setLevel(java.util.logging.Level.WARNING);
        workers = new ArrayList<>();
        for (int i = 0; i < workerCount; i++) {
            workers.add(Worker.builder("http://10.0." + (i / 250) + "." + (i % 250) + ":8000").build());
        }
        workers = List.copyOf(workers);
        policy = new StickyBalancedPolicy(new InMemorySessionTable(Duration.ofHours(2), System::nanoTime),
                StickyBalancedPolicy.Settings.DEFAULTS);
        if (live.equals("pressured")) {
            Map<String, LiveLoad.Sample> samples = new java.util.concurrent.ConcurrentHashMap<>();
            workers.forEach(w -> samples.put(w.baseUrl(), new LiveLoad.Sample(0, 32, 0.9)));
            policy.readLiveLoad(samples::get);
        }
        SplittableRandom sizes = new SplittableRandom(7);
        tracked = new RoutingRequest[sessions];
        for (int i = 0; i < sessions; i++) {
            tracked[i] = request(id(i), 4_000 + sizes.nextInt(200_000));
            policy.onComplete(policy.select(workers, tracked[i]), true);
        }
    }

    private static String id(int session) {
        return id(session / SAMPLES_PER_GROUP, Integer.toString(session % SAMPLES_PER_GROUP));
    }

    /** A request of {@code session} built anew, as the proxy builds one from a body: its id's hash not yet cached. */
    private static RoutingRequest freshRequest(int session) {
        return request(id(session), 4_000 + (session * 7_919L) % 200_000);
    }

    private static String id(int group, String sample) {
        return "instance-" + Integer.toHexString(group * 0x9E3779B9) + "_" + sample;
    }

    private static RoutingRequest request(String id, long bodyBytes) {
        return RoutingRequest.of(new Extraction(id, null, null), HeaderLookup.NONE, () -> "", bodyBytes);
    }

    @State(Scope.Thread)
    public static class ThreadCursor {
        final SplittableRandom random = new SplittableRandom(Thread.currentThread().threadId());
        long fresh;
    }

    @Benchmark
    @Threads(1)
    public Worker trackedSession(ThreadCursor cursor) {
        Worker w = policy.select(workers, tracked[cursor.random.nextInt(tracked.length)]);
        policy.onComplete(w, true);
        return w;
    }

    @Benchmark
    @Threads(1)
    public Worker trackedSessionFreshId(ThreadCursor cursor) {
        Worker w = policy.select(workers, freshRequest(cursor.random.nextInt(tracked.length)));
        policy.onComplete(w, true);
        return w;
    }

    @Benchmark
    @Threads(1)
    public Worker newSessionOfAGroupReserveAndRelease(ThreadCursor cursor) {
        String id = id(cursor.random.nextInt(tracked.length / SAMPLES_PER_GROUP), "new" + cursor.fresh++);
        Worker w = policy.select(workers, request(id, 8_000));
        policy.onComplete(w, true);
        policy.finishSession(id);
        return w;
    }

    /** The same 100k ids in a plain map, for the floors: what one lookup costs with no table around it. */
    @State(Scope.Benchmark)
    public static class Floor {
        final Map<String, Integer> index = new HashMap<>();
        RoutingRequest[] tracked;

        @Setup(Level.Trial)
        public void setUp(StickyBalancedSelectBenchmark bench) {
            tracked = new RoutingRequest[bench.sessions];
            for (int i = 0; i < tracked.length; i++) {
                tracked[i] = request(id(i), 8_000);
                index.put(tracked[i].sessionId(), i);
            }
        }
    }

    @Benchmark
    @Threads(1)
    public RoutingRequest floorFreshRequestOnly(ThreadCursor cursor) {
        return freshRequest(cursor.random.nextInt(tracked.length));
    }

    @Benchmark
    @Threads(1)
    public Integer floorFreshIdLookup(ThreadCursor cursor, Floor floor) {
        return floor.index.get(freshRequest(cursor.random.nextInt(floor.tracked.length)).sessionId());
    }

    @Benchmark
    @Threads(1)
    public Integer floorTrackedIdLookup(ThreadCursor cursor, Floor floor) {
        return floor.index.get(floor.tracked[cursor.random.nextInt(floor.tracked.length)].sessionId());
    }
}
