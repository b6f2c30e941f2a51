package org.vllmrouter.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class IndexConcurrencyTest {

    static final CacheIdentity MODEL = new CacheIdentity("m", 4);

    final KvIndex index = new KvIndex(100_000, new KvMetrics(new PrometheusRegistry()));

    @Test
    void aLookupDoesNotWaitForAWriterHoldingTheTree() throws Exception {
        SourceClaims a = index.claims(MODEL, new SourceId("a", 0));
        a.stored(null, new long[] {1, 2}, Msgpack.tokens(0, 8), null, Tier.DEVICE);
        RadixTree tree = a.tree();
        tree.writeLock.lock();
        try {
            PrefixMatch m = CompletableFuture
                    .supplyAsync(() -> index.match(MODEL, BlockKeys.of(Msgpack.tokens(0, 8), 4, null), List.of("a")))
                    .get(30, TimeUnit.SECONDS);
            assertEquals(2, m.blocks(0, Tier.DEVICE));
        } finally {
            tree.writeLock.unlock();
        }
    }

    /**
     * Two sources store, remove and clear their own prompts while two readers look up: no
     * reader fails or sees more than was ever stored, and the final state is exact.
     */
    @Test
    void writersAndReadersRunTogether() throws Exception {
        int blocks = 32;
        int[] prompt = Msgpack.tokens(0, blocks * 4);
        long[] keys = BlockKeys.of(prompt, 4, null);
        List<String> workers = List.of("a", "b");
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> writers = new ArrayList<>();
            for (String w : workers) {
                writers.add(pool.submit(() -> {
                    SourceClaims c = index.claims(MODEL, new SourceId(w, 0));
                    long[] hashes = new long[blocks];
                    for (int i = 0; i < blocks; i++) {
                        hashes[i] = i + 1;
                    }
                    for (int round = 0; round < 2_000; round++) {
                        c.stored(null, hashes, prompt, null, Tier.DEVICE);
                        c.removed(new long[] {hashes[blocks / 2]}, Tier.DEVICE);
                        if (round % 7 == 0) {
                            c.cleared();
                        }
                    }
                    c.stored(null, hashes, prompt, null, Tier.DEVICE);
                    return null;
                }));
            }
            List<Future<Integer>> readers = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                readers.add(pool.submit(() -> {
                    int lookups = 0;
                    while (!stop.get()) {
                        PrefixMatch m = index.match(MODEL, keys, workers);
                        for (int i = 0; i < workers.size(); i++) {
                            int d = m.blocks(i, Tier.DEVICE);
                            assertTrue(d >= 0 && d <= blocks, "depth " + d);
                        }
                        lookups++;
                    }
                    return lookups;
                }));
            }
            for (Future<?> w : writers) {
                w.get(60, TimeUnit.SECONDS);
            }
            stop.set(true);
            for (Future<Integer> r : readers) {
                assertTrue(r.get(60, TimeUnit.SECONDS) > 0);
            }
        } finally {
            pool.shutdownNow();
        }
        PrefixMatch m = index.match(MODEL, keys, workers);
        assertEquals(blocks, m.blocks(0, Tier.DEVICE));
        assertEquals(blocks, m.blocks(1, Tier.DEVICE));
        assertEquals(blocks, index.blocks());
    }
}
