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
import org.vllmrouter.core.policy.StickyLeastLoadedPolicy;
import org.vllmrouter.core.worker.Worker;

/**
 * sticky_least_loaded select+reserve with 64 workers and 1M (and 1k) tracked sessions: a later turn of a
 * tracked session (the common case), and a new session that is reserved and released again (so the
 * table stays at 1M).
 */
@BenchmarkMode({Mode.AverageTime, Mode.Throughput})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class StickySelectBenchmark {
    /** A small table too, to show the decision does not grow with the number of tracked sessions. */
    @Param({"1000", "1000000"})
    public int sessions;

    @Param("64")
    public int workerCount;

    List<Worker> workers;
    StickyLeastLoadedPolicy policy;
    RoutingRequest[] tracked;

    @Setup(Level.Trial)
    public void setUp() {
        java.util.logging.Logger.getLogger(StickyLeastLoadedPolicy.class.getName()).setLevel(java.util.logging.Level.WARNING);
        workers = new ArrayList<>();
        for (int i = 0; i < workerCount; i++) {
            workers.add(Worker.builder("http://10.0." + (i / 250) + "." + (i % 250) + ":8000").build());
        }
        workers = List.copyOf(workers);
        policy = new StickyLeastLoadedPolicy(Duration.ofHours(2), System::nanoTime);
        tracked = new RoutingRequest[sessions];
        for (int i = 0; i < sessions; i++) {
            tracked[i] = RoutingRequest.of("trajectory-" + i + "-" + Integer.toHexString(i * 0x9E3779B9), null, "");
            policy.select(workers, tracked[i]);
        }
    }

    @State(Scope.Thread)
    public static class ThreadCursor {
        final SplittableRandom random = new SplittableRandom(Thread.currentThread().threadId());
        long fresh;
    }

    @Benchmark
    @Threads(1)
    public Worker trackedSession1Thread(ThreadCursor cursor) {
        return policy.select(workers, tracked[cursor.random.nextInt(tracked.length)]);
    }

    @Benchmark
    @Threads(2)
    public Worker trackedSession2Threads(ThreadCursor cursor) {
        return policy.select(workers, tracked[cursor.random.nextInt(tracked.length)]);
    }

    @Benchmark
    @Threads(1)
    public Worker newSessionReserveAndRelease1Thread(ThreadCursor cursor) {
        return newSession(cursor);
    }

    @Benchmark
    @Threads(2)
    public Worker newSessionReserveAndRelease2Threads(ThreadCursor cursor) {
        return newSession(cursor);
    }

    private Worker newSession(ThreadCursor cursor) {
        String id = "new-" + Thread.currentThread().threadId() + "-" + cursor.fresh++;
        Worker w = policy.select(workers, RoutingRequest.of(id, null, ""));
        policy.finishSession(id);
        return w;
    }
}
