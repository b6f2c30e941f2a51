package org.vllmrouter.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.policy.StickyLeastLoadedPolicy;
import org.vllmrouter.core.session.SessionStore;
import org.vllmrouter.core.session.SessionStores;
import org.vllmrouter.core.worker.Worker;

/**
 * sticky_least_loaded select with sessions in memory and in Redis (a redis-server this benchmark starts on
 * loopback), side by side: a later turn of a tracked session, and a new session (released again outside the
 * measurement). Besides JMH's time per select, each iteration prints the CPU time per select ({@code cpu/op}) of
 * the benchmark thread plus the session store's own threads (the Redis client's I/O and timer threads and the
 * store's background thread), leaving out the JIT compiler and the collector; redis-server's CPU is not in it.
 *
 * <p>Run (redis-server on PATH): {@code java -jar java/bench/target/router-bench.jar SessionStoreSelect
 * -f 1 -wi 3 -w 2s -i 5 -r 2s}; on a shared machine run it several times and compare medians.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class SessionStoreSelectBenchmark {
    /** Held, so that its level stays set: the per-session INFO line would be most of what is measured. */
    private static final java.util.logging.Logger POLICY_LOG =
            java.util.logging.Logger.getLogger(StickyLeastLoadedPolicy.class.getName());

    @Param({"memory", "redis"})
    public String store;

    @Param("10000")
    public int sessions;

    @Param("64")
    public int workerCount;

    List<Worker> workers;
    SessionStore sessionStore;
    StickyLeastLoadedPolicy policy;
    RoutingRequest[] tracked;
    Process redis;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        POLICY_LOG.setLevel(java.util.logging.Level.WARNING);
        workers = new ArrayList<>();
        for (int i = 0; i < workerCount; i++) {
            workers.add(Worker.builder("http://10.0." + (i / 250) + "." + (i % 250) + ":8000").build());
        }
        workers = List.copyOf(workers);
        String spec = "memory";
        if (store.equals("redis")) {
            int port = freePort();
            redis = new ProcessBuilder("redis-server", "--port", Integer.toString(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no").redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            awaitListening(port);
            spec = "redis://127.0.0.1:" + port;
        }
        sessionStore = SessionStores.open(spec, Duration.ofHours(2), Integer.MAX_VALUE);
        policy = new StickyLeastLoadedPolicy(sessionStore.table("bench"));
        tracked = new RoutingRequest[sessions];
        for (int i = 0; i < sessions; i++) {
            tracked[i] = RoutingRequest.of("trajectory-" + i + "-" + Integer.toHexString(i * 0x9E3779B9), null, "");
            policy.select(workers, tracked[i]);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        sessionStore.close();
        if (redis != null) {
            redis.destroy();
            redis.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress("127.0.0.1", 0));
            return socket.getLocalPort();
        }
    }

    private static void awaitListening(int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("redis-server did not start on port " + port, notYet);
                }
                Thread.sleep(20);
            }
        }
    }

    /** Per thread: a random source, new session ids, and the process CPU time per select of each iteration. */
    @State(Scope.Thread)
    public static class Cursor {
        final SplittableRandom random = new SplittableRandom(Thread.currentThread().threadId());
        final List<String> started = new ArrayList<>();
        long fresh;
        long ops;
        long cpuAtStart;

        @Setup(Level.Iteration)
        public void startIteration() {
            ops = 0;
            cpuAtStart = routingCpuNanos();
        }

        @TearDown(Level.Iteration)
        public void endIteration(SessionStoreSelectBenchmark bench) {
            long cpu = routingCpuNanos() - cpuAtStart;
            System.out.printf("  [%s] cpu/op %.3f us over %d selects%n", bench.store, cpu / 1000.0 / Math.max(1, ops), ops);
            for (String id : started) {
                bench.policy.finishSession(id);
            }
            started.clear();
        }

        /** CPU time of this thread and of the store's threads (their names start with these prefixes). */
        private static long routingCpuNanos() {
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            long total = threads.getCurrentThreadCpuTime();
            for (ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
                if (t != null && (t.getThreadName().startsWith("lettuce-")
                        || t.getThreadName().startsWith("vllm-router-session-store"))) {
                    total += Math.max(0, threads.getThreadCpuTime(t.getThreadId()));
                }
            }
            return total;
        }
    }

    @Benchmark
    @Threads(1)
    public Worker trackedSession(Cursor cursor) {
        cursor.ops++;
        return policy.select(workers, tracked[cursor.random.nextInt(tracked.length)]);
    }

    @Benchmark
    @Threads(1)
    public Worker newSession(Cursor cursor) {
        cursor.ops++;
        String id = "new-" + Thread.currentThread().threadId() + "-" + cursor.fresh++;
        cursor.started.add(id);
        return policy.select(workers, RoutingRequest.of(id, null, ""));
    }
}
