package org.vllmrouter.bench;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
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
import org.vllmrouter.kv.BlockKeys;
import org.vllmrouter.kv.CacheIdentity;
import org.vllmrouter.kv.KvIndex;
import org.vllmrouter.kv.KvMetrics;
import org.vllmrouter.kv.PrefixMatch;
import org.vllmrouter.kv.SourceClaims;
import org.vllmrouter.kv.SourceId;
import org.vllmrouter.kv.Tier;

/**
 * kv_aware's lookup: an 8k-token prompt (512 blocks of 16) against 64 workers that hold about
 * 100k blocks each. Conversations share a 64-block system prompt, then go their own way; each
 * worker holds 223 of 1,000 conversations, so a looked-up prompt is held whole by some workers
 * and only up to the system prompt by the rest. {@code match} takes the block keys as given (a
 * policy computes them once per request); {@code keysAndMatch} adds the SHA-256 of every block.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class KvIndexMatchBenchmark {

    static final int BLOCK = 16;
    static final int PROMPT_BLOCKS = 512;
    static final int SYSTEM_BLOCKS = 64;
    static final int CONVERSATIONS = 1_000;
    static final int WORKERS = 64;
    static final int PER_WORKER = 223;

    final CacheIdentity model = new CacheIdentity("bench", BLOCK);
    KvIndex index;
    List<String> workers;
    int[][] prompts;
    long[][] keys;

    @Setup(Level.Trial)
    public void setUp() {
        index = new KvIndex(KvIndex.DEFAULT_BLOCK_BUDGET, new KvMetrics(new PrometheusRegistry()));
        SplittableRandom random = new SplittableRandom(11);
        prompts = new int[CONVERSATIONS][PROMPT_BLOCKS * BLOCK];
        for (int c = 0; c < CONVERSATIONS; c++) {
            for (int t = 0; t < prompts[c].length; t++) {
                prompts[c][t] = t < SYSTEM_BLOCKS * BLOCK ? 1_000 + t : random.nextInt(150_000);
            }
        }
        workers = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
            String url = "http://10.0.0." + w + ":8000";
            workers.add(url);
            SourceClaims claims = index.claims(model, new SourceId(url, 0));
            for (int i = 0; i < PER_WORKER; i++) {
                int c = random.nextInt(CONVERSATIONS);
                long[] hashes = new long[PROMPT_BLOCKS];
                for (int b = 0; b < PROMPT_BLOCKS; b++) {
                    hashes[b] = b < SYSTEM_BLOCKS ? b : (long) c * PROMPT_BLOCKS + b;
                }
                claims.stored(null, hashes, prompts[c], null, Tier.DEVICE);
            }
        }
        workers = List.copyOf(workers);
        keys = new long[64][];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = BlockKeys.of(prompts[random.nextInt(CONVERSATIONS)], BLOCK, null);
        }
        System.out.printf("%nindex: %,d blocks, %,d claims per worker on average%n", index.blocks(),
                (long) WORKERS * PER_WORKER * (PROMPT_BLOCKS - SYSTEM_BLOCKS) / WORKERS);
    }

    @State(Scope.Thread)
    public static class Cursor {
        int next;
    }

    @Benchmark
    public PrefixMatch match(Cursor cursor) {
        return index.match(model, keys[cursor.next++ & 63], workers);
    }

    @Benchmark
    public PrefixMatch keysAndMatch(Cursor cursor) {
        int[] prompt = prompts[cursor.next++ % CONVERSATIONS];
        return index.match(model, BlockKeys.of(prompt, BLOCK, null), workers);
    }
}
