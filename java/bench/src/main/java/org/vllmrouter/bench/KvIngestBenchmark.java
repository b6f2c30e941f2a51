package org.vllmrouter.bench;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.concurrent.TimeUnit;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.vllmrouter.kv.BatchApplier;
import org.vllmrouter.kv.CacheIdentity;
import org.vllmrouter.kv.EventBatchDecoder;
import org.vllmrouter.kv.KvIndex;
import org.vllmrouter.kv.KvMetrics;
import org.vllmrouter.kv.MalformedBatchException;
import org.vllmrouter.kv.SourceId;

/**
 * One subscriber's work, on one thread: decode vLLM msgpack batches and apply them to the
 * index. Each batch is 16 events, as a busy scheduler step might send: 8 {@code BlockStored}
 * of one block (16 tokens, u64 hashes, the parent the previous batch stored) along 8 growing
 * prompts, and 8 {@code BlockRemoved} of the blocks stored 64 batches earlier, so the index
 * stays the same size while the benchmark cycles through 4,096 batches. One-block stores are
 * the costliest kind per event: vLLM's usually carry a whole prompt's new blocks.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Thread)
public class KvIngestBenchmark {

    static final int BLOCK = 16;
    static final int CHAINS = 8;
    static final int BATCHES = 4_096;
    static final int WINDOW = 64;
    static final int EVENTS_PER_BATCH = 2 * CHAINS;

    byte[][] batches;
    BatchApplier applier;
    int next;

    @Setup(Level.Trial)
    public void setUp() throws MalformedBatchException {
        KvMetrics metrics = new KvMetrics(new PrometheusRegistry());
        KvIndex index = new KvIndex(KvIndex.DEFAULT_BLOCK_BUDGET, metrics);
        CacheIdentity model = new CacheIdentity("bench", BLOCK);
        applier = new BatchApplier(index.claims(model, new SourceId("http://10.0.0.1:8000", 0)), metrics,
                new EventBatchDecoder());
        batches = new byte[BATCHES][];
        for (int i = 0; i < BATCHES; i++) {
            batches[i] = batch(i);
        }
        for (byte[] b : batches) {
            applier.apply(b);
        }
    }

    /** Engine hashes look random over all 64 bits, as vLLM's do (half need msgpack's uint64). */
    static long hash(int chain, int position) {
        long z = chain * 0x9E3779B97F4A7C15L + position;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static byte[] batch(int i) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(1.7e9 + i).packArrayHeader(EVENTS_PER_BATCH);
            for (int c = 0; c < CHAINS; c++) {
                p.packMapHeader(9);
                p.packString("type").packString("BlockStored");
                p.packString("block_hashes").packArrayHeader(1);
                u64(p, hash(c, i));
                p.packString("parent_block_hash");
                if (i == 0) {
                    p.packNil();
                } else {
                    u64(p, hash(c, i - 1));
                }
                p.packString("token_ids").packArrayHeader(BLOCK);
                for (int t = 0; t < BLOCK; t++) {
                    p.packInt((c * 7_919 + i * BLOCK + t) % 150_000);
                }
                p.packString("block_size").packInt(BLOCK);
                p.packString("lora_id").packNil();
                p.packString("medium").packString("GPU");
                p.packString("lora_name").packNil();
                p.packString("group_idx").packInt(0);
            }
            for (int c = 0; c < CHAINS; c++) {
                p.packMapHeader(4);
                p.packString("type").packString("BlockRemoved");
                p.packString("block_hashes").packArrayHeader(1);
                u64(p, hash(c, Math.floorMod(i - WINDOW, BATCHES)));
                p.packString("medium").packString("GPU");
                p.packString("group_idx").packInt(0);
            }
            p.packInt(0);
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void u64(MessageBufferPacker p, long h) throws IOException {
        if (h < 0) {
            p.packBigInteger(new BigInteger(Long.toUnsignedString(h)));
        } else {
            p.packLong(h);
        }
    }

    @Benchmark
    @OperationsPerInvocation(EVENTS_PER_BATCH)
    public int decodeAndApply() throws MalformedBatchException {
        byte[] b = batches[next];
        next = (next + 1) % BATCHES;
        return applier.apply(b);
    }
}
