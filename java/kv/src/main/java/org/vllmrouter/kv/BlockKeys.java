package org.vllmrouter.kv;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The index's own name for a block: SHA-256 over the LoRA adapter's name (UTF-8, empty without
 * one) and the block's token ids, each as a u32 little-endian, cut to its first 8 bytes. Keys
 * are not chained: a block's position is the path to it in the tree, so the router never needs
 * the engine's hash seed or algorithm, and the engine's own hashes serve only to find a parent
 * and to remove. A collision would have to happen between two children of the same node, so 64
 * bits are plenty.
 */
public final class BlockKeys {

    private static final VarHandle U32_LE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle U64_BE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private static final ThreadLocal<BlockKeys> PER_THREAD = ThreadLocal.withInitial(BlockKeys::new);

    private final MessageDigest sha256;
    private byte[] scratch = new byte[64];
    private final byte[] digest = new byte[32];

    /** Not thread-safe: one per thread (a subscriber, or a routing thread through {@link #of}). */
    public BlockKeys() {
        try {
            sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /**
     * The keys of every full block of {@code tokenIds}; a last partial block has none, as vLLM
     * caches only full blocks.
     */
    public static long[] of(int[] tokenIds, int blockSize, String loraName) {
        BlockKeys keys = PER_THREAD.get();
        byte[] lora = lora(loraName);
        long[] out = new long[tokenIds.length / blockSize];
        for (int b = 0; b < out.length; b++) {
            out[b] = keys.key(lora, tokenIds, b * blockSize, blockSize);
        }
        return out;
    }

    static byte[] lora(String loraName) {
        return loraName == null ? new byte[0] : loraName.getBytes(StandardCharsets.UTF_8);
    }

    /** The key of the block of {@code length} tokens at {@code from}. */
    long key(byte[] lora, int[] tokenIds, int from, int length) {
        int bytes = length * 4;
        if (scratch.length < bytes) {
            scratch = new byte[bytes];
        }
        for (int i = 0; i < length; i++) {
            U32_LE.set(scratch, i * 4, tokenIds[from + i]);
        }
        sha256.update(lora);
        sha256.update(scratch, 0, bytes);
        try {
            sha256.digest(digest, 0, digest.length);
        } catch (DigestException e) {
            throw new IllegalStateException(e);
        }
        return (long) U64_BE.get(digest, 0);
    }
}
