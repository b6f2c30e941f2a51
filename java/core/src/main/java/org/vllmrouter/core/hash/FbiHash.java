package org.vllmrouter.core.hash;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
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
    private static final VarHandle LITTLE_ENDIAN_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private FbiHash() {
    }

    /** fbi_hash of the UTF-8 bytes of {@code key}. */
    public static long hash(String key) {
        return hash(key.getBytes(StandardCharsets.UTF_8));
    }

    /** fbi_hash of {@code utf8}. */
    public static long hash(byte[] utf8) {
        return hashOfBucket(furcHash(new BitSource(murmurHash64A(utf8, 0, utf8.length, SEED)), BUCKETS));
    }

    /**
     * {@code fbi_hash(prefix ‖ suffix)} for every suffix. The prefix is hashed once per distinct suffix
     * length instead of once per suffix, which matters when the prefix is a whole request body and the
     * suffixes are worker URLs (they usually share one length).
     */
    public static long[] hashWithSuffixes(byte[] prefix, byte[][] suffixes) {
        long[] out = new long[suffixes.length];
        int prefixBlocks = prefix.length >>> 3;
        int lastLength = -1;
        long shared = 0;
        for (int i = 0; i < suffixes.length; i++) {
            int total = prefix.length + suffixes[i].length;
            if (total != lastLength) {
                // The running state after the prefix's whole blocks depends only on the total length.
                shared = murmurBlocks(SEED ^ (total * M), prefix, 0, prefixBlocks);
                lastLength = total;
            }
            byte[] rest = new byte[total - prefixBlocks * 8];
            int prefixTail = prefix.length - prefixBlocks * 8;
            System.arraycopy(prefix, prefixBlocks * 8, rest, 0, prefixTail);
            System.arraycopy(suffixes[i], 0, rest, prefixTail, suffixes[i].length);
            long murmur = murmurFinish(murmurBlocks(shared, rest, 0, rest.length >>> 3), rest, (rest.length >>> 3) * 8,
                    rest.length & 7);
            out[i] = hashOfBucket(furcHash(new BitSource(murmur), BUCKETS));
        }
        return out;
    }

    private static long hashOfBucket(int bucket) {
        byte[] le = {(byte) bucket, (byte) (bucket >>> 8), (byte) (bucket >>> 16), (byte) (bucket >>> 24)};
        return murmurHash64A(le, 0, le.length, SEED);
    }

    /** MurmurHash64A of {@code data[off, off+len)} with {@code seed}. */
    public static long murmurHash64A(byte[] data, int off, int len, long seed) {
        int blocks = len >>> 3;
        long h = murmurBlocks(seed ^ (len * M), data, off, blocks);
        return murmurFinish(h, data, off + blocks * 8, len & 7);
    }

    private static long murmurBlocks(long h, byte[] data, int off, int blocks) {
        int p = off;
        for (int i = 0; i < blocks; i++, p += 8) {
            long k = (long) LITTLE_ENDIAN_LONG.get(data, p);
            k *= M;
            k ^= k >>> R;
            k *= M;
            h ^= k;
            h *= M;
        }
        return h;
    }

    private static long murmurFinish(long h, byte[] data, int p, int tail) {
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
        return furcHash(new BitSource(murmurHash64A(key, 0, key.length, SEED)), m);
    }

    private static int furcHash(BitSource bits, int m) {
        if (m <= 1) {
            return 0;
        }
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
        private long[] words = new long[16];
        private int filled = 1;

        BitSource(long keyHash) {
            words[0] = keyHash;
        }

        boolean bit(int idx) {
            int word = idx >>> 6;
            while (filled <= word) {
                if (filled == words.length) {
                    words = java.util.Arrays.copyOf(words, words.length * 2);
                }
                words[filled] = rehash64A(words[filled - 1]);
                filled++;
            }
            return ((words[word] >>> (idx & 63)) & 1L) != 0;
        }
    }
}
