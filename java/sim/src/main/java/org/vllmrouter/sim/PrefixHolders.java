package org.vllmrouter.sim;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.vllmrouter.mock.rollout.EngineModel;
import org.vllmrouter.mock.rollout.EngineRequest;

/**
 * Which workers' prefix caches hold each block, kept from the engines' own cache events (a block registered, a block
 * evicted), so that one walk over a prompt's blocks gives every worker's cached prefix at once: the set of workers
 * that still hold every block so far shrinks block by block, and a worker leaves it at its prefix's end. Asking each
 * engine in turn costs a table lookup per worker and block; here a block costs a word per 64 workers.
 */
final class PrefixHolders {
    private final int blockSize;
    private final int words;
    /** Per block hash, a bit per worker that has it registered; no entry once no worker has. */
    private final Map<Long, long[]> holders = new HashMap<>();
    private final long[] active;

    PrefixHolders(int workerCount, int blockSize) {
        this.blockSize = blockSize;
        this.words = (workerCount + 63) >>> 6;
        this.active = new long[words];
    }

    /** The listener to give worker {@code w}'s engine, which keeps this index in step with its prefix cache. */
    EngineModel.CacheListener listenerFor(int w) {
        int word = w >>> 6;
        long bit = 1L << (w & 63);
        return new EngineModel.CacheListener() {
            @Override
            public void stored(EngineRequest request, int block) {
                holders.computeIfAbsent(request.blockHash(block), h -> new long[words])[word] |= bit;
            }

            @Override
            public void removed(long hash) {
                long[] set = holders.get(hash);
                set[word] &= ~bit;
                if (isEmpty(set)) {
                    holders.remove(hash);
                }
            }
        };
    }

    /**
     * Into {@code tokens} (indexed by worker), the tokens of a prompt ({@code promptTokens} long, its blocks hashing
     * to {@code hashes}) each worker holds, as {@link EngineModel#cachedPrefixTokens} counts them.
     */
    void cachedPrefixTokens(long[] hashes, int promptTokens, int[] tokens) {
        Arrays.fill(tokens, 0);
        int limit = Math.min(hashes.length, (promptTokens - 1) / blockSize);
        if (limit <= 0) {
            return;
        }
        long[] first = holders.get(hashes[0]);
        if (first == null) {
            return;
        }
        System.arraycopy(first, 0, active, 0, words);
        for (int n = 1; n < limit; n++) {
            long[] next = holders.get(hashes[n]);
            boolean any = false;
            for (int w = 0; w < words; w++) {
                long held = active[w];
                if (held == 0) {
                    continue;
                }
                long kept = next == null ? 0 : held & next[w];
                setAll(tokens, w, held & ~kept, n * blockSize);
                active[w] = kept;
                any |= kept != 0;
            }
            if (!any) {
                return;
            }
        }
        for (int w = 0; w < words; w++) {
            setAll(tokens, w, active[w], limit * blockSize);
        }
    }

    private static void setAll(int[] tokens, int word, long bits, int value) {
        for (long rest = bits; rest != 0; rest &= rest - 1) {
            tokens[(word << 6) + Long.numberOfTrailingZeros(rest)] = value;
        }
    }

    private static boolean isEmpty(long[] set) {
        for (long word : set) {
            if (word != 0) {
                return false;
            }
        }
        return true;
    }
}
