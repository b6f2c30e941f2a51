package org.vllmrouter.server.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteBufferFeeder;
import io.netty.buffer.ByteBuf;
import io.netty.util.ByteProcessor;
import io.netty.util.concurrent.FastThreadLocal;
import java.io.IOException;

/**
 * Reads a worker's token usage ({@code usage.prompt_tokens} and {@code usage.prompt_tokens_details.cached_tokens})
 * out of an answer while it is relayed, part by part, without holding or copying it: a plain JSON answer and an SSE
 * stream alike, since it looks only for the {@code "usage": {} } member wherever it is (in a stream, the final
 * usage chunk). A byte matcher finds the member's key and the bounds of its object; only the object is parsed, by
 * Jackson's non-blocking parser fed the parts' own memory. An answer without usage parses nothing; the last usage
 * object seen wins (a stream with continuous usage reports every chunk). A malformed usage object ends the scan
 * with nothing reported.
 *
 * <p>The key is matched on raw bytes: inside a JSON string a quote is escaped, so {@code "usage"} followed by a
 * colon is a member name (only a member name that itself ends in an escaped quote and {@code usage} could pass).
 * Most of an answer is text and chunks without usage, so the bytes are not walked one by one: Netty's word-at-a-time
 * {@link ByteBuf#indexOf} finds each {@code g} (rare in JSON punctuation and keys), and only a {@code g} preceded by
 * {@code "usa} hands its bytes to the byte matcher, which runs until the key is ruled out or its object opens. A key
 * cut by a part's end is carried over as the matcher's state: a part ending in a prefix of the key without its
 * {@code g} ({@code "}, {@code "u}, {@code "us}, {@code "usa}) sets that state, and a later byte resumes it.
 * The parser is fed exactly the object, never a byte past it, so it ends with no input left over and can read
 * the next answer's object: each event loop keeps one idle parser, and a scan takes it (or makes one when another
 * scan of the loop holds it) and gives it back when its object is read.
 */
final class UsageScanner implements ByteProcessor {
    private static final JsonFactory JSON = new JsonFactory();
    private static final FastThreadLocal<JsonParser> IDLE_PARSER = new FastThreadLocal<>();
    private static final byte[] KEY = {'"', 'u', 's', 'a', 'g', 'e', '"'};
    /** Matcher states past the key's bytes: before the colon, then before the value. */
    private static final int BEFORE_COLON = KEY.length;
    private static final int BEFORE_VALUE = KEY.length + 1;
    /** The key's bytes before its {@code g}, and those four bytes as one big-endian int. */
    private static final int KEY_BEFORE_G = 4;
    private static final int QUOTE_U_S_A = ('"' << 24) | ('u' << 16) | ('s' << 8) | 'a';

    private int state;
    private boolean failed;
    /** Not null while inside a usage object. */
    private JsonParser parser;
    /** The object's bounds, found on bytes: nesting, and whether a string (and an escape in it) is open. */
    private int byteDepth;
    private boolean inString;
    private boolean escaped;
    /** What the parser has read of the object so far. */
    private int depth;
    private boolean inDetails;
    private long objectPrompt;
    private long objectCached;
    private long promptTokens = -1;
    private long cachedTokens = -1;

    /** Prompt tokens of the last usage object seen; -1 when none reported them. */
    long promptTokens() {
        return promptTokens;
    }

    /** Cached prompt tokens of the last usage object seen; -1 when none reported them. */
    long cachedTokens() {
        return cachedTokens;
    }

    /** Looks at the readable bytes of the next part of the answer; changes nothing in {@code part}. */
    void scan(ByteBuf part) {
        int i = part.readerIndex();
        int end = part.writerIndex();
        while (i < end && !failed) {
            if (parser == null) {
                int from = state == 0 ? nextCandidate(part, i, end) : i;
                if (from < 0) {
                    state = keyPrefixAtEnd(part, i, end);
                    return;
                }
                int stop = part.forEachByte(from, end - from, this);
                if (stop < 0) {
                    return;
                }
                if (state == 0) {
                    i = stop + 1;
                    continue;
                }
                openObject();
                i = stop;
            }
            int close = part.forEachByte(i, end - i, this);
            int stop = close < 0 ? end : close + 1;
            parse(part, i, stop, close >= 0);
            i = stop;
        }
    }

    /** Where the next possible key starts in {@code [from, end)}: the quote of a {@code "usag}; -1 when none. */
    private static int nextCandidate(ByteBuf part, int from, int end) {
        for (int g = part.indexOf(from, end, (byte) 'g'); g >= 0; g = part.indexOf(g + 1, end, (byte) 'g')) {
            int quote = g - KEY_BEFORE_G;
            if (quote >= from && part.getInt(quote) == QUOTE_U_S_A) {
                return quote;
            }
        }
        return -1;
    }

    /** The matcher's state after {@code [from, end)} held no key: the length of the key prefix it ends in. */
    private static int keyPrefixAtEnd(ByteBuf part, int from, int end) {
        for (int length = Math.min(KEY_BEFORE_G, end - from); length > 0; length--) {
            int at = end - length;
            int matched = 0;
            while (matched < length && part.getByte(at + matched) == KEY[matched]) {
                matched++;
            }
            if (matched == length) {
                return length;
            }
        }
        return 0;
    }

    @Override
    public boolean process(byte b) {
        return parser == null ? matchKey(b) : withinObject(b);
    }

    /**
     * False where the matcher is done with the bytes it was handed: at the opening brace of a {@code "usage"}
     * member's object (the state is left non-zero), or where the key is ruled out (the state is back to 0).
     */
    private boolean matchKey(byte b) {
        if (state < KEY.length) {
            state = b == KEY[state] ? state + 1 : b == '"' ? 1 : 0;
            return state != 0;
        }
        if (b == ' ' || b == '\n' || b == '\r' || b == '\t') {
            return true;
        }
        if (state == BEFORE_COLON && b == ':') {
            state = BEFORE_VALUE;
            return true;
        }
        if (state == BEFORE_VALUE && b == '{') {
            return false;
        }
        state = b == '"' ? 1 : 0;
        return state != 0;
    }

    /** False at the object's closing brace. */
    private boolean withinObject(byte b) {
        if (inString) {
            if (escaped) {
                escaped = false;
            } else if (b == '\\') {
                escaped = true;
            } else if (b == '"') {
                inString = false;
            }
            return true;
        }
        if (b == '"') {
            inString = true;
        } else if (b == '{' || b == '[') {
            byteDepth++;
        } else if (b == '}' || b == ']') {
            return --byteDepth != 0;
        }
        return true;
    }

    private void openObject() {
        JsonParser idle = IDLE_PARSER.get();
        if (idle != null) {
            IDLE_PARSER.set(null);
            parser = idle;
        } else {
            try {
                parser = JSON.createNonBlockingByteBufferParser();
            } catch (IOException e) {
                failed = true;
                return;
            }
        }
        state = 0;
        byteDepth = 0;
        inString = false;
        escaped = false;
        depth = 0;
        inDetails = false;
        objectPrompt = -1;
        objectCached = -1;
    }

    /** Feeds {@code [from, to)} of the object to the parser; {@code closes}: the object's last byte is at to - 1. */
    private void parse(ByteBuf part, int from, int to, boolean closes) {
        JsonParser p = parser;
        try {
            // The part's own view when it has one (no object per feed): the parser reads it only within this call.
            int length = to - from;
            ((ByteBufferFeeder) p.getNonBlockingInputFeeder()).feedInput(part.nioBufferCount() == 1
                    ? part.internalNioBuffer(from, length) : part.nioBuffer(from, length));
            JsonToken token;
            while ((token = p.nextToken()) != JsonToken.NOT_AVAILABLE && token != null) {
                switch (token) {
                    case START_OBJECT, START_ARRAY -> {
                        depth++;
                        if (depth == 2) {
                            inDetails = token == JsonToken.START_OBJECT
                                    && "prompt_tokens_details".equals(p.currentName());
                        }
                    }
                    case END_OBJECT, END_ARRAY -> {
                        if (--depth == 0) {
                            promptTokens = objectPrompt;
                            cachedTokens = objectCached;
                            parser = null;
                            if (IDLE_PARSER.get() == null) {
                                IDLE_PARSER.set(p);
                            }
                            return;
                        }
                    }
                    case VALUE_NUMBER_INT -> {
                        if (depth == 1 && "prompt_tokens".equals(p.currentName())) {
                            objectPrompt = p.getLongValue();
                        } else if (depth == 2 && inDetails && "cached_tokens".equals(p.currentName())) {
                            objectCached = p.getLongValue();
                        }
                    }
                    default -> {
                    }
                }
            }
            if (closes) {
                // The bytes closed the object but the parser did not: they are not JSON.
                fail();
            }
        } catch (IOException malformed) {
            fail();
        }
    }

    /** Nothing more is read from this answer; the parser, in an unknown state, is dropped. */
    private void fail() {
        failed = true;
        parser = null;
    }
}
