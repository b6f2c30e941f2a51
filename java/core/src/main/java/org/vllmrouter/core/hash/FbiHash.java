package org.vllmrouter.core.hash;

import java.nio.charset.StandardCharsets;

/**
 * Upstream's {@code fbi_hash}: MurmurHash64A over the little-endian bytes of a FurcHash bucket.
 * Bit-for-bit compatible so that consistent_hash, rendezvous_hash and the sticky tie-break pick the
 * same worker as the Rust router for the same key and worker URLs. All arithmetic is unsigned 64-bit;
 * compare results with {@link Long#compareUnsigned}.
 */
public final class FbiHash {
    private static final long M = 0xc6a4a7935bd1e995L;
    private static final int R = 47;
    private static final long SEED = 4193360111L;
    private static final int BUCKETS = (1 << 23) - 1;
    private static final int FURC_MAX_TRIES = 32;
    private static final int FURC_SHIFT = 23;

    private FbiHash() {
    }

    /** fbi_hash of the UTF-8 bytes of {@code key}. */
    public static long hash(String key) {
        return hash(key.getBytes(StandardCharsets.UTF_8));
    }

    /** fbi_hash of {@code utf8}. */
    public static long hash(byte[] utf8) {
        int bucket = furcHash(utf8, BUCKETS);
        byte[] le = {(byte) bucket, (byte) (bucket >>> 8), (byte) (bucket >>> 16), (byte) (bucket >>> 24)};
        return murmurHash64A(le, 0, le.length, SEED);
    }

    /** MurmurHash64A of {@code data[off, off+len)} with {@code seed}. */
    public static long murmurHash64A(byte[] data, int off, int len, long seed) {
        long h = seed ^ (len * M);
        int blocks = len >>> 3;
        int p = off;
        for (int i = 0; i < blocks; i++, p += 8) {
            long k = (data[p] & 0xffL)
                    | (data[p + 1] & 0xffL) << 8
                    | (data[p + 2] & 0xffL) << 16
                    | (data[p + 3] & 0xffL) << 24
                    | (data[p + 4] & 0xffL) << 32
                    | (data[p + 5] & 0xffL) << 40
                    | (data[p + 6] & 0xffL) << 48
                    | (data[p + 7] & 0xffL) << 56;
            k *= M;
            k ^= k >>> R;
            k *= M;
            h ^= k;
            h *= M;
        }
        int tail = len & 7;
        if (tail != 0) {
            for (int i = 0; i < tail; i++) {
                h ^= (data[p + i] & 0xffL) << (8 * i);
            }
            h *= M;
        }
        return finalise(h);
    }

    static long rehash64A(long k) {
        long h = SEED ^ (8 * M);
        k *= M;
        k ^= k >>> R;
        k *= M;
        h ^= k;
        h *= M;
        return finalise(h);
    }

    private static long finalise(long h) {
        h ^= h >>> R;
        h *= M;
        h ^= h >>> R;
        return h;
    }

    /** FurcHash bucket of {@code key} in {@code [0, m)}; upstream's variant (checks d == 0 before decrementing). */
    static int furcHash(byte[] key, int m) {
        if (m <= 1) {
            return 0;
        }
        BitSource bits = new BitSource(key);
        int d = 0;
        while ((1L << d) < m) {
            d++;
        }
        int a = d;
        for (int tries = 0; tries < FURC_MAX_TRIES; tries++) {
            while (!bits.bit(a)) {
                if (d == 0) {
                    return 0;
                }
                d--;
                a = d;
            }
            a += FURC_SHIFT;
            long num = 1;
            for (int i = 0; i < Math.max(d - 1, 0); i++) {
                num = (num << 1) | (bits.bit(a) ? 1 : 0);
                a += FURC_SHIFT;
            }
            if (num < m) {
                return (int) num;
            }
        }
        return 0;
    }

    /** Lazily extended bit stream: word 0 = MurmurHash64A(key), word n = Rehash64A(word n-1). */
    private static final class BitSource {
        private long[] words = new long[8];
        private int filled;
        private final byte[] key;

        BitSource(byte[] key) {
            this.key = key;
        }

        boolean bit(int idx) {
            int word = idx >>> 6;
            while (filled <= word) {
                if (filled == words.length) {
                    words = java.util.Arrays.copyOf(words, words.length * 2);
                }
                words[filled] = filled == 0 ? murmurHash64A(key, 0, key.length, SEED) : rehash64A(words[filled - 1]);
                filled++;
            }
            return ((words[word] >>> (idx & 63)) & 1L) != 0;
        }
    }
}
