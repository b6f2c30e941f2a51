package org.vllmrouter.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
        SplittableRandom sizes = new SplittableRandom(7);
        tracked = new RoutingRequest[sessions];
        for (int i = 0; i < sessions; i++) {
            tracked[i] = request(id(i / SAMPLES_PER_GROUP, Integer.toString(i % SAMPLES_PER_GROUP)),
                    4_000 + sizes.nextInt(200_000));
            policy.onComplete(policy.select(workers, tracked[i]), true);
        }
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
    public Worker newSessionOfAGroupReserveAndRelease(ThreadCursor cursor) {
        String id = id(cursor.random.nextInt(tracked.length / SAMPLES_PER_GROUP), "new" + cursor.fresh++);
        Worker w = policy.select(workers, request(id, 8_000));
        policy.onComplete(w, true);
        policy.finishSession(id);
        return w;
    }
}
