package org.vllmrouter.kv;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/** Builds msgpack payloads for tests, in vLLM's shapes or deliberately not. */
final class Msgpack {

    /** A block hash written as msgpack's uint64 (the top bit may be set), as vLLM writes its int hashes. */
    record U64(long bits) {}

    private Msgpack() {}

    static byte[] pack(Object value) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            write(p, value);
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code [ts, events, 0]}. */
    static byte[] batch(Object... events) {
        return pack(List.of(1.5, List.of(events), 0));
    }

    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    /** A BlockStored map with every field vLLM sends; {@code parent} null at a prompt's start. */
    static Map<String, Object> stored(long[] hashes, Long parent, int[] tokens, int blockSize, String medium) {
        return map("type", "BlockStored", "block_hashes", u64s(hashes), "parent_block_hash",
                parent == null ? null : new U64(parent), "token_ids", tokens, "block_size", blockSize,
                "lora_id", null, "medium", medium, "lora_name", null);
    }

    static Map<String, Object> removed(long[] hashes, String medium) {
        return map("type", "BlockRemoved", "block_hashes", u64s(hashes), "medium", medium);
    }

    static Map<String, Object> cleared() {
        return map("type", "AllBlocksCleared");
    }

    static List<Object> u64s(long... hashes) {
        List<Object> out = new ArrayList<>();
        for (long h : hashes) {
            out.add(new U64(h));
        }
        return out;
    }

    static int[] tokens(int from, int count) {
        int[] t = new int[count];
        Arrays.setAll(t, i -> from + i);
        return t;
    }

    private static void write(MessageBufferPacker p, Object v) throws IOException {
        switch (v) {
            case null -> p.packNil();
            case U64 u -> {
                if (u.bits() < 0) {
                    p.packBigInteger(new BigInteger(Long.toUnsignedString(u.bits())));
                } else {
                    p.packLong(u.bits());
                }
            }
            case Integer i -> p.packInt(i);
            case Long l -> p.packLong(l);
            case Double d -> p.packDouble(d);
            case String s -> p.packString(s);
            case Boolean b -> p.packBoolean(b);
            case byte[] b -> {
                p.packBinaryHeader(b.length);
                p.writePayload(b);
            }
            case int[] ints -> {
                p.packArrayHeader(ints.length);
                for (int i : ints) {
                    p.packLong(Integer.toUnsignedLong(i));
                }
            }
            case List<?> list -> {
                p.packArrayHeader(list.size());
                for (Object o : list) {
                    write(p, o);
                }
            }
            case Map<?, ?> map -> {
                p.packMapHeader(map.size());
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    write(p, e.getKey());
                    write(p, e.getValue());
                }
            }
            default -> throw new IllegalArgumentException("cannot pack " + v.getClass());
        }
    }
}
