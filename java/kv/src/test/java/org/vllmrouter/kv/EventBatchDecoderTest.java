package org.vllmrouter.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.vllmrouter.kv.Msgpack.map;
import static org.vllmrouter.kv.Msgpack.pack;
import static org.vllmrouter.kv.Msgpack.tokens;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.vllmrouter.kv.KvMetrics.Rejection;

class EventBatchDecoderTest {

    final EventBatchDecoder decoder = new EventBatchDecoder(1 << 16, 100);

    static Map<String, Object> stored() {
        return Msgpack.stored(new long[] {0xDEADBEEF12345678L, -1L}, null, tokens(0, 8), 4, "GPU");
    }

    @Test
    void readsVllmsMapEventsWithU64Hashes() throws Exception {
        EventBatch b = decoder.decode(Msgpack.batch(stored(), Msgpack.removed(new long[] {Long.MIN_VALUE + 1}, "CPU"),
                Msgpack.cleared()));
        assertEquals(1.5, b.ts());
        assertEquals(0, b.dataParallelRank());
        KvEvent.BlockStored s = assertInstanceOf(KvEvent.BlockStored.class, b.events().get(0));
        assertArrayEquals(new long[] {0xDEADBEEF12345678L, 0xFFFFFFFFFFFFFFFFL}, s.blockHashes());
        assertNull(s.parentBlockHash());
        assertArrayEquals(tokens(0, 8), s.tokenIds());
        assertEquals("GPU", s.medium());
        KvEvent.BlockRemoved r = assertInstanceOf(KvEvent.BlockRemoved.class, b.events().get(1));
        assertArrayEquals(new long[] {0x8000000000000001L}, r.blockHashes());
        assertInstanceOf(KvEvent.AllBlocksCleared.class, b.events().get(2));
    }

    @Test
    void byteDigestHashesAreTheirLastEightBytes() throws Exception {
        byte[] digest = new byte[32];
        for (int i = 0; i < digest.length; i++) {
            digest[i] = (byte) i;
        }
        Map<String, Object> e = stored();
        e.put("block_hashes", List.of(digest));
        e.put("token_ids", tokens(0, 4));
        e.put("parent_block_hash", digest);
        KvEvent.BlockStored s = (KvEvent.BlockStored) decoder.decode(Msgpack.batch(e)).events().get(0);
        assertEquals(0x18191A1B1C1D1E1FL, s.blockHashes()[0]);
        assertEquals(0x18191A1B1C1D1E1FL, s.parentBlockHash());
    }

    @Test
    void readsTheOlderArrayEncodingAndABatchWithoutRank() throws Exception {
        List<Object> storedArray = new ArrayList<>(List.of("BlockStored", Msgpack.u64s(7), 3, tokens(0, 4), 4));
        storedArray.add(null);
        EventBatch b = decoder.decode(pack(List.of(2.0, List.of(storedArray, List.of("BlockRemoved", Msgpack.u64s(7)),
                List.of("AllBlocksCleared")))));
        assertNull(b.dataParallelRank());
        assertEquals(3, b.events().size());
        KvEvent.BlockStored s = (KvEvent.BlockStored) b.events().get(0);
        assertEquals(3L, s.parentBlockHash());
        assertArrayEquals(new long[] {7}, s.blockHashes());
        assertNull(s.medium());
        assertInstanceOf(KvEvent.BlockRemoved.class, b.events().get(1));
    }

    @Test
    void unknownFieldsAreSkippedAndOptionalOnesRead() throws Exception {
        Map<String, Object> e = stored();
        e.put("group_idx", 1);
        e.put("extra_keys", Arrays.asList(List.of("salt"), null));
        e.put("kv_cache_spec_kind", "full_attention");
        e.put("a_field_from_the_future", map("x", List.of(1, 2)));
        e.put("a_much_longer_field_name_from_the_future_".repeat(3), "value");
        KvEvent.BlockStored s = (KvEvent.BlockStored) decoder.decode(Msgpack.batch(e)).events().get(0);
        assertEquals(1, s.groupIdx());
        assertEquals(true, s.extraKeys());
    }

    Rejection rejection(byte[] payload) {
        return assertThrows(MalformedBatchException.class, () -> decoder.decode(payload)).reason();
    }

    Rejection rejectionOfEvent(Map<String, Object> event) {
        return rejection(Msgpack.batch(event));
    }

    @Test
    void garbageIsNotMsgpack() {
        assertEquals(Rejection.NOT_MSGPACK, rejection(new byte[] {(byte) 0xc1, 1, 2}));
        assertEquals(Rejection.NOT_MSGPACK, rejection(new byte[0]));
        byte[] good = Msgpack.batch(stored());
        assertEquals(Rejection.NOT_MSGPACK, rejection(Arrays.copyOf(good, good.length - 3)), "cut short");
    }

    @Test
    void aMapInsteadOfTheBatchArrayIsABadBatch() {
        assertEquals(Rejection.BAD_BATCH, rejection(pack(map("ts", 1.0, "events", List.of()))));
        assertEquals(Rejection.BAD_BATCH, rejection(pack(List.of(1.0))));
        assertEquals(Rejection.BAD_BATCH, rejection(pack(List.of("now", List.of()))));
        assertEquals(Rejection.BAD_BATCH, rejection(pack(List.of(1.0, List.of(), 0, 0))));
    }

    @Test
    void anUnknownEventTypeRejectsTheBatch() {
        assertEquals(Rejection.UNKNOWN_EVENT, rejectionOfEvent(map("type", "BlockTeleported")));
        assertEquals(Rejection.UNKNOWN_EVENT, rejection(Msgpack.batch(List.of("BlockTeleported"))));
    }

    @Test
    void aMissingFieldRejectsTheBatch() {
        for (String field : List.of("type", "block_hashes", "parent_block_hash", "token_ids", "block_size")) {
            Map<String, Object> e = stored();
            e.remove(field);
            assertEquals(Rejection.MISSING_FIELD, rejectionOfEvent(e), field);
        }
        assertEquals(Rejection.MISSING_FIELD, rejectionOfEvent(map("type", "BlockRemoved", "medium", "GPU")));
        assertEquals(Rejection.MISSING_FIELD, rejection(Msgpack.batch(List.of("BlockStored", Msgpack.u64s(1)))));
    }

    @Test
    void aHashOfTheWrongTypeRejectsTheBatch() {
        Map<String, Object> e = stored();
        e.put("block_hashes", List.of("abc"));
        assertEquals(Rejection.BAD_HASH, rejectionOfEvent(e));
        e.put("block_hashes", List.of());
        assertEquals(Rejection.BAD_HASH, rejectionOfEvent(e));
        e.put("block_hashes", 5);
        assertEquals(Rejection.BAD_HASH, rejectionOfEvent(e));
        e = stored();
        e.put("parent_block_hash", 1.5);
        assertEquals(Rejection.BAD_HASH, rejectionOfEvent(e));
    }

    @Test
    void badFieldsRejectTheBatch() {
        Map<String, Object> e = stored();
        e.put("token_ids", List.of(1, -2));
        assertEquals(Rejection.BAD_FIELD, rejectionOfEvent(e));
        e = stored();
        e.put("block_size", 0);
        assertEquals(Rejection.BAD_FIELD, rejectionOfEvent(e));
        e = stored();
        e.put("medium", 3);
        assertEquals(Rejection.BAD_FIELD, rejectionOfEvent(e));
        assertEquals(Rejection.BAD_FIELD, rejection(Msgpack.batch("BlockStored")));
        Map<Object, Object> intKey = new HashMap<>(stored());
        intKey.put(7, 1);
        assertEquals(Rejection.BAD_FIELD, rejection(pack(List.of(1.0, List.of(intKey)))));
    }

    @Test
    void aRepeatedKeyRejectsTheBatch() {
        byte[] once = pack(map("type", "AllBlocksCleared"));
        byte[] twice = new byte[1 + (once.length - 1) * 2];
        twice[0] = (byte) 0x82;
        System.arraycopy(once, 1, twice, 1, once.length - 1);
        System.arraycopy(once, 1, twice, once.length, once.length - 1);
        byte[] batch = concat(new byte[] {(byte) 0x92, (byte) 0xcb, 0x3f, (byte) 0xf8, 0, 0, 0, 0, 0, 0, (byte) 0x91}, twice);
        assertEquals(Rejection.BAD_FIELD, rejection(batch));
    }

    @Test
    void trailingBytesRejectTheBatch() {
        assertEquals(Rejection.TRAILING_BYTES, rejection(concat(Msgpack.batch(stored()), new byte[] {0})));
    }

    @Test
    void aHugeBatchIsRejected() {
        assertEquals(Rejection.TOO_LARGE, rejection(new byte[(1 << 16) + 1]));
        List<Object> many = new ArrayList<>();
        for (int i = 0; i < 101; i++) {
            many.add(Msgpack.cleared());
        }
        assertEquals(Rejection.TOO_LARGE, rejection(pack(List.of(1.0, many))));
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
