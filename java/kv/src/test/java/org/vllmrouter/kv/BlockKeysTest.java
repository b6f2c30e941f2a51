package org.vllmrouter.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.junit.jupiter.api.Test;

class BlockKeysTest {

    /** The definition, written out the slow way. */
    static long expected(String lora, int[] tokens) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        if (lora != null) {
            sha.update(lora.getBytes(StandardCharsets.UTF_8));
        }
        ByteBuffer le = ByteBuffer.allocate(tokens.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int t : tokens) {
            le.putInt(t);
        }
        sha.update(le.array());
        return ByteBuffer.wrap(sha.digest()).getLong();
    }

    @Test
    void aKeyIsTheSha256OfLoraNameAndLittleEndianTokenIds() throws Exception {
        int[] prompt = {1, 2, 3, 4, 128_000, 0xFFFF_FFFF, 7, 8, 9};
        long[] keys = BlockKeys.of(prompt, 4, null);
        assertArrayEquals(new long[] {expected(null, new int[] {1, 2, 3, 4}),
                expected(null, new int[] {128_000, 0xFFFF_FFFF, 7, 8})}, keys, "the partial last block has no key");
        assertEquals(expected("sql", new int[] {1, 2, 3, 4}), BlockKeys.of(prompt, 4, "sql")[0]);
    }

    @Test
    void keysAreNotChainedSoEqualBlocksHaveEqualKeysAnywhere() {
        long[] keys = BlockKeys.of(new int[] {5, 5, 5, 5, 5, 5}, 2, null);
        assertEquals(keys[0], keys[1]);
        assertEquals(keys[1], keys[2]);
        assertNotEquals(keys[0], BlockKeys.of(new int[] {5, 5}, 2, "adapter")[0]);
    }
}
