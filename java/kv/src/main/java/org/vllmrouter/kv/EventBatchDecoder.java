package org.vllmrouter.kv;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;
import org.vllmrouter.kv.KvMetrics.Rejection;

/**
 * Reads vLLM's msgpack KV-event batches: {@code [ts, [event...], data_parallel_rank?]}, events
 * as maps tagged by {@code type} (vLLM's current encoding) or as arrays whose first element is
 * the tag (its older {@code array_like} encoding). Block hashes are integers (u64) or byte
 * digests (bin). Anything else rejects the whole batch with a {@link MalformedBatchException};
 * fields this decoder does not know are skipped, as vLLM's own decoder skips them, so a newer
 * engine's additions do not stop ingestion.
 *
 * <p>Not thread-safe (a scratch buffer): one per subscriber.
 */
public final class EventBatchDecoder {

    /** vLLM's own subscriber example and upstream's router reject larger payloads. */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 16 << 20;
    public static final int DEFAULT_MAX_EVENTS = 65_536;

    /** The fields this decoder reads, by position: keys are matched as bytes, without making strings. */
    private static final byte[][] FIELDS = utf8("block_hashes", "parent_block_hash", "token_ids", "block_size",
            "type", "lora_id", "medium", "lora_name", "extra_keys", "group_idx", "ownership");
    private static final int HASHES = 0;
    private static final int PARENT = 1;
    private static final int TOKENS = 2;
    private static final int BLOCK_SIZE = 3;
    private static final int TYPE = 4;
    private static final int LORA_ID = 5;
    private static final int MEDIUM = 6;
    private static final int LORA_NAME = 7;
    private static final int EXTRA_KEYS = 8;
    private static final int GROUP_IDX = 9;
    private static final int OWNERSHIP = 10;
    private static final int STORED_REQUIRED = 0b1111;
    private static final String[] KNOWN_STRINGS = {"BlockStored", "BlockRemoved", "AllBlocksCleared", "GPU", "CPU"};
    private static final byte[][] KNOWN_BYTES = utf8(KNOWN_STRINGS);

    private final int maxPayloadBytes;
    private final int maxEvents;
    private final byte[] scratch = new byte[64];

    public EventBatchDecoder() {
        this(DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_MAX_EVENTS);
    }

    public EventBatchDecoder(int maxPayloadBytes, int maxEvents) {
        this.maxPayloadBytes = maxPayloadBytes;
        this.maxEvents = maxEvents;
    }

    public EventBatch decode(byte[] payload) throws MalformedBatchException {
        if (payload.length > maxPayloadBytes) {
            throw new MalformedBatchException(Rejection.TOO_LARGE,
                    "payload of " + payload.length + " bytes is over the limit of " + maxPayloadBytes);
        }
        if (payload.length == 0) {
            throw new MalformedBatchException(Rejection.NOT_MSGPACK, "empty payload");
        }
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            EventBatch batch = batch(u);
            if (u.hasNext()) {
                throw new MalformedBatchException(Rejection.TRAILING_BYTES,
                        (payload.length - u.getTotalReadBytes()) + " bytes after the batch");
            }
            return batch;
        } catch (MessagePackException | IOException e) {
            throw new MalformedBatchException(Rejection.NOT_MSGPACK, "not a msgpack batch: " + e.getMessage());
        }
    }

    private EventBatch batch(MessageUnpacker u) throws IOException, MalformedBatchException {
        if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
            throw new MalformedBatchException(Rejection.BAD_BATCH,
                    "batch is a " + u.getNextFormat().getValueType() + ", not an array [ts, events, rank?]");
        }
        int size = u.unpackArrayHeader();
        if (size < 2 || size > 3) {
            throw new MalformedBatchException(Rejection.BAD_BATCH, "batch has " + size + " elements, not 2 or 3");
        }
        double ts = switch (u.getNextFormat().getValueType()) {
            case FLOAT -> u.unpackDouble();
            case INTEGER -> u.unpackLong();
            default -> throw new MalformedBatchException(Rejection.BAD_BATCH, "ts is not a number");
        };
        if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
            throw new MalformedBatchException(Rejection.BAD_BATCH, "events is not an array");
        }
        int count = u.unpackArrayHeader();
        if (count > maxEvents) {
            throw new MalformedBatchException(Rejection.TOO_LARGE, count + " events, over the limit of " + maxEvents);
        }
        List<KvEvent> events = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            events.add(event(u));
        }
        Integer rank = null;
        if (size == 3) {
            rank = nullableLong(u, "data_parallel_rank", Rejection.BAD_BATCH) instanceof Long r ? r.intValue() : null;
        }
        return new EventBatch(ts, events, rank);
    }

    private KvEvent event(MessageUnpacker u) throws IOException, MalformedBatchException {
        ValueType type = u.getNextFormat().getValueType();
        if (type == ValueType.MAP) {
            return mapEvent(u, u.unpackMapHeader());
        }
        if (type == ValueType.ARRAY) {
            return arrayEvent(u, u.unpackArrayHeader());
        }
        throw new MalformedBatchException(Rejection.BAD_FIELD, "an event is a " + type + ", not a map");
    }

    private KvEvent mapEvent(MessageUnpacker u, int fields) throws IOException, MalformedBatchException {
        String tag = null;
        long[] hashes = null;
        Long parent = null;
        int[] tokens = null;
        int blockSize = 0;
        Long loraId = null;
        String medium = null;
        String loraName = null;
        boolean extraKeys = false;
        boolean ownership = false;
        int group = 0;
        int seen = 0;
        for (int i = 0; i < fields; i++) {
            if (u.getNextFormat().getValueType() != ValueType.STRING) {
                throw new MalformedBatchException(Rejection.BAD_FIELD, "an event has a key that is not a string");
            }
            int field = field(u);
            if (field >= 0) {
                if ((seen & (1 << field)) != 0) {
                    throw new MalformedBatchException(Rejection.BAD_FIELD,
                            "an event repeats the key '" + new String(FIELDS[field], StandardCharsets.UTF_8) + "'");
                }
                seen |= 1 << field;
            }
            switch (field) {
                case TYPE -> tag = string(u, "type");
                case HASHES -> hashes = hashes(u);
                case PARENT -> parent = nullableHash(u);
                case TOKENS -> tokens = tokenIds(u);
                case BLOCK_SIZE -> blockSize = positiveInt(u, "block_size");
                case LORA_ID -> loraId = nullableLong(u, "lora_id", Rejection.BAD_FIELD);
                case MEDIUM -> medium = nullableString(u, "medium");
                case LORA_NAME -> loraName = nullableString(u, "lora_name");
                case EXTRA_KEYS -> extraKeys = extraKeys(u);
                case GROUP_IDX -> group = nullableLong(u, "group_idx", Rejection.BAD_FIELD) instanceof Long g ? g.intValue() : 0;
                case OWNERSHIP -> ownership = notNil(u);
                default -> u.skipValue();
            }
        }
        if (tag == null) {
            throw new MalformedBatchException(Rejection.MISSING_FIELD, "an event has no 'type'");
        }
        return switch (tag) {
            case "BlockStored" -> {
                if ((seen & STORED_REQUIRED) != STORED_REQUIRED) {
                    throw new MalformedBatchException(Rejection.MISSING_FIELD, "BlockStored lacks "
                            + missing(seen, "block_hashes", "parent_block_hash", "token_ids", "block_size"));
                }
                yield new KvEvent.BlockStored(hashes, parent, tokens, blockSize, loraId, medium, loraName,
                        extraKeys, group, ownership);
            }
            case "BlockRemoved" -> {
                if ((seen & (1 << HASHES)) == 0) {
                    throw new MalformedBatchException(Rejection.MISSING_FIELD, "BlockRemoved lacks block_hashes");
                }
                yield new KvEvent.BlockRemoved(hashes, medium, group);
            }
            case "AllBlocksCleared" -> new KvEvent.AllBlocksCleared();
            default -> throw new MalformedBatchException(Rejection.UNKNOWN_EVENT, "unknown KV event type '" + tag + "'");
        };
    }

    /** The position of the key in {@link #FIELDS}, or -1 for a key this decoder skips. */
    private int field(MessageUnpacker u) throws IOException {
        int len = u.unpackRawStringHeader();
        if (len > scratch.length) {
            u.readPayload(len);
            return -1;
        }
        u.readPayload(scratch, 0, len);
        for (int f = 0; f < FIELDS.length; f++) {
            if (FIELDS[f].length == len && Arrays.equals(FIELDS[f], 0, len, scratch, 0, len)) {
                return f;
            }
        }
        return -1;
    }

    /** vLLM's older encoding: {@code [tag, field...]} in declaration order, trailing defaults omitted. */
    private KvEvent arrayEvent(MessageUnpacker u, int size) throws IOException, MalformedBatchException {
        if (size < 1 || u.getNextFormat().getValueType() != ValueType.STRING) {
            throw new MalformedBatchException(Rejection.MISSING_FIELD, "an array event has no type tag");
        }
        String tag = u.unpackString();
        int fields = size - 1;
        KvEvent event;
        switch (tag) {
            case "BlockStored" -> {
                if (fields < 5) {
                    throw new MalformedBatchException(Rejection.MISSING_FIELD, "BlockStored has " + fields + " of 5 fields");
                }
                long[] hashes = hashes(u);
                Long parent = nullableHash(u);
                int[] tokens = tokenIds(u);
                int blockSize = positiveInt(u, "block_size");
                Long loraId = nullableLong(u, "lora_id", Rejection.BAD_FIELD);
                String medium = fields > 5 ? nullableString(u, "medium") : null;
                String loraName = fields > 6 ? nullableString(u, "lora_name") : null;
                boolean extraKeys = fields > 7 && extraKeys(u);
                int group = fields > 8 && nullableLong(u, "group_idx", Rejection.BAD_FIELD) instanceof Long g ? g.intValue() : 0;
                skip(u, fields - 9);
                event = new KvEvent.BlockStored(hashes, parent, tokens, blockSize, loraId, medium, loraName,
                        extraKeys, group, false);
            }
            case "BlockRemoved" -> {
                if (fields < 1) {
                    throw new MalformedBatchException(Rejection.MISSING_FIELD, "BlockRemoved lacks block_hashes");
                }
                long[] hashes = hashes(u);
                String medium = fields > 1 ? nullableString(u, "medium") : null;
                int group = fields > 2 && nullableLong(u, "group_idx", Rejection.BAD_FIELD) instanceof Long g ? g.intValue() : 0;
                skip(u, fields - 3);
                event = new KvEvent.BlockRemoved(hashes, medium, group);
            }
            case "AllBlocksCleared" -> {
                skip(u, fields);
                event = new KvEvent.AllBlocksCleared();
            }
            default -> throw new MalformedBatchException(Rejection.UNKNOWN_EVENT, "unknown KV event type '" + tag + "'");
        }
        return event;
    }

    private static void skip(MessageUnpacker u, int values) throws IOException {
        for (int i = 0; i < values; i++) {
            u.skipValue();
        }
    }

    private long[] hashes(MessageUnpacker u) throws IOException, MalformedBatchException {
        if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
            throw new MalformedBatchException(Rejection.BAD_HASH, "block_hashes is not an array");
        }
        int n = u.unpackArrayHeader();
        if (n == 0) {
            throw new MalformedBatchException(Rejection.BAD_HASH, "block_hashes is empty");
        }
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = hash(u);
        }
        return out;
    }

    private Long nullableHash(MessageUnpacker u) throws IOException, MalformedBatchException {
        if (u.getNextFormat() == MessageFormat.NIL) {
            u.unpackNil();
            return null;
        }
        return hash(u);
    }

    /** A u64 (or int64) as its 64 bits; a byte digest as its last 8 bytes, as vLLM's int form is. */
    private long hash(MessageUnpacker u) throws IOException, MalformedBatchException {
        MessageFormat f = u.getNextFormat();
        if (f == MessageFormat.UINT64) {
            u.readPayload(scratch, 0, 9);
            long h = 0;
            for (int i = 1; i < 9; i++) {
                h = (h << 8) | (scratch[i] & 0xFF);
            }
            return h;
        }
        if (f.getValueType() == ValueType.INTEGER) {
            return u.unpackLong();
        }
        if (f.getValueType() == ValueType.BINARY) {
            int len = u.unpackBinaryHeader();
            if (len == 0 || len > scratch.length) {
                throw new MalformedBatchException(Rejection.BAD_HASH, "a block hash of " + len + " bytes");
            }
            u.readPayload(scratch, 0, len);
            long h = 0;
            for (int i = Math.max(0, len - 8); i < len; i++) {
                h = (h << 8) | (scratch[i] & 0xFF);
            }
            return h;
        }
        throw new MalformedBatchException(Rejection.BAD_HASH, "a block hash is a " + f.getValueType());
    }

    private static int[] tokenIds(MessageUnpacker u) throws IOException, MalformedBatchException {
        if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
            throw new MalformedBatchException(Rejection.BAD_FIELD, "token_ids is not an array");
        }
        int n = u.unpackArrayHeader();
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            if (u.getNextFormat().getValueType() != ValueType.INTEGER) {
                throw new MalformedBatchException(Rejection.BAD_FIELD, "a token id is not an integer");
            }
            long id = u.unpackLong();
            if (id < 0 || id > 0xFFFF_FFFFL) {
                throw new MalformedBatchException(Rejection.BAD_FIELD, "token id " + id + " is not a u32");
            }
            out[i] = (int) id;
        }
        return out;
    }

    private static int positiveInt(MessageUnpacker u, String field) throws IOException, MalformedBatchException {
        if (u.getNextFormat().getValueType() != ValueType.INTEGER) {
            throw new MalformedBatchException(Rejection.BAD_FIELD, field + " is not an integer");
        }
        long v = u.unpackLong();
        if (v < 1 || v > Integer.MAX_VALUE) {
            throw new MalformedBatchException(Rejection.BAD_FIELD, field + " is " + v);
        }
        return (int) v;
    }

    private static Long nullableLong(MessageUnpacker u, String field, Rejection reason)
            throws IOException, MalformedBatchException {
        MessageFormat f = u.getNextFormat();
        if (f == MessageFormat.NIL) {
            u.unpackNil();
            return null;
        }
        if (f.getValueType() != ValueType.INTEGER || f == MessageFormat.UINT64) {
            throw new MalformedBatchException(reason, field + " is not an integer or nil");
        }
        return u.unpackLong();
    }

    /** Event types and media come back as constants: the same few strings arrive millions of times. */
    private String string(MessageUnpacker u, String field) throws IOException, MalformedBatchException {
        if (u.getNextFormat().getValueType() != ValueType.STRING) {
            throw new MalformedBatchException(Rejection.BAD_FIELD, field + " is not a string");
        }
        int len = u.unpackRawStringHeader();
        byte[] bytes = len <= scratch.length ? scratch : new byte[len];
        u.readPayload(bytes, 0, len);
        for (int i = 0; i < KNOWN_BYTES.length; i++) {
            if (KNOWN_BYTES[i].length == len && Arrays.equals(KNOWN_BYTES[i], 0, len, bytes, 0, len)) {
                return KNOWN_STRINGS[i];
            }
        }
        return new String(bytes, 0, len, StandardCharsets.UTF_8);
    }

    private String nullableString(MessageUnpacker u, String field) throws IOException, MalformedBatchException {
        if (u.getNextFormat() == MessageFormat.NIL) {
            u.unpackNil();
            return null;
        }
        return string(u, field);
    }

    private static boolean notNil(MessageUnpacker u) throws IOException {
        if (u.getNextFormat() == MessageFormat.NIL) {
            u.unpackNil();
            return false;
        }
        u.skipValue();
        return true;
    }

    /** True when any block carries extra keys (a list whose entries are not all nil). */
    private static boolean extraKeys(MessageUnpacker u) throws IOException, MalformedBatchException {
        MessageFormat f = u.getNextFormat();
        if (f == MessageFormat.NIL) {
            u.unpackNil();
            return false;
        }
        if (f.getValueType() != ValueType.ARRAY) {
            throw new MalformedBatchException(Rejection.BAD_FIELD, "extra_keys is not an array or nil");
        }
        int n = u.unpackArrayHeader();
        boolean any = false;
        for (int i = 0; i < n; i++) {
            any |= notNil(u);
        }
        return any;
    }

    private static byte[][] utf8(String... strings) {
        byte[][] out = new byte[strings.length][];
        for (int i = 0; i < strings.length; i++) {
            out[i] = strings[i].getBytes(StandardCharsets.UTF_8);
        }
        return out;
    }

    private static String missing(int seen, String... names) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            if ((seen & (1 << i)) == 0) {
                out.add(names[i]);
            }
        }
        return String.join(", ", out);
    }
}
