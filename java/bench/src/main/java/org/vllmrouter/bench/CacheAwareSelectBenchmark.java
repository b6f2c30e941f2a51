package org.vllmrouter.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.vllmrouter.core.policy.CacheAwarePolicy;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.worker.Worker;

/**
 * cache_aware select on 2 KiB prompts: 256 multi-turn conversations (a shared system prompt, then
 * each turn extending the previous one) over 8 workers, already seen once, so the tree is in steady
 * state and each select is a prefix match plus an insert that mostly refreshes existing nodes.
 */
@BenchmarkMode({Mode.AverageTime, Mode.Throughput})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class CacheAwareSelectBenchmark {
    static final int PROMPT_CHARS = 2048;

    List<Worker> workers;
    CacheAwarePolicy policy;
    RoutingRequest[] prompts;

    @Setup(Level.Trial)
    public void setUp() {
        workers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            workers.add(Worker.builder("http://10.0.0." + i + ":8000").build());
        }
        workers = List.copyOf(workers);
        policy = new CacheAwarePolicy(new CacheAwarePolicy.Settings(0.3, 64, 1.5, 0, 1L << 26));
        SplittableRandom random = new SplittableRandom(7);
        String system = "You are a coding agent. Follow the tool protocol exactly. ".repeat(8);
        List<RoutingRequest> all = new ArrayList<>();
        for (int c = 0; c < 256; c++) {
            StringBuilder conversation = new StringBuilder(system).append("Task #").append(c).append(": ");
            while (conversation.length() < PROMPT_CHARS) {
                conversation.append("turn ").append(random.nextInt(1_000_000)).append(" observation and action; ");
                String prompt = conversation.length() >= PROMPT_CHARS
                        ? conversation.substring(0, PROMPT_CHARS) : conversation.toString();
                if (prompt.length() > PROMPT_CHARS * 3 / 4) {
                    all.add(RoutingRequest.of(null, null, prompt));
                }
            }
        }
        prompts = all.toArray(RoutingRequest[]::new);
        for (RoutingRequest r : prompts) {
            policy.select(workers, r);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        policy.close();
    }

    @State(Scope.Thread)
    public static class ThreadCursor {
        final SplittableRandom random = new SplittableRandom(Thread.currentThread().threadId());
    }

    @Benchmark
    public Worker select(ThreadCursor cursor) {
        return policy.select(workers, prompts[cursor.random.nextInt(prompts.length)]);
    }
}
