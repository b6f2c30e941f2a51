package org.vllmrouter.server.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteBufferFeeder;
import io.netty.buffer.ByteBuf;
import io.netty.util.ByteProcessor;
import java.io.IOException;

/**
 * Reads a worker's token usage ({@code usage.prompt_tokens} and {@code usage.prompt_tokens_details.cached_tokens})
 * out of an answer while it is relayed, part by part, without holding or copying it: a plain JSON answer and an SSE
 * stream alike, since it looks only for the {@code "usage": {} } member wherever it is (in a stream, the final
 * usage chunk). A byte matcher finds the member's key; only its object is parsed, by Jackson's non-blocking parser
 * fed the parts' own memory. An answer without usage parses nothing; the last usage object seen wins (a stream with
 * continuous usage reports every chunk). A malformed usage object ends the scan with nothing reported.
 *
 * <p>The key is matched on raw bytes: inside a JSON string a quote is escaped, so {@code "usage"} followed by a
 * colon is a member name (only a member name that itself ends in an escaped quote and {@code usage} could pass).
 */
final class UsageScanner implements ByteProcessor {
    private static final JsonFactory JSON = new JsonFactory();
    private static final byte[] KEY = {'"', 'u', 's', 'a', 'g', 'e', '"'};
    /** Matcher states past the key's bytes: before the colon, then before the value. */
    private static final int BEFORE_COLON = KEY.length;
    private static final int BEFORE_VALUE = KEY.length + 1;

    private int state;
    private boolean failed;
    private JsonParser parser;
    private long fed;
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
                int start = part.forEachByte(i, end - i, this);
                if (start < 0) {
                    return;
                }
                openParser();
                i = start;
            }
            i = parse(part, i, end);
        }
    }

    @Override
    public boolean process(byte b) {
        if (state < KEY.length) {
            state = b == KEY[state] ? state + 1 : b == '"' ? 1 : 0;
            return true;
        }
        if (b == ' ' || b == '\n' || b == '\r' || b == '\t') {
            return true;
        }
        if (state == BEFORE_COLON && b == ':') {
            state = BEFORE_VALUE;
            return true;
        }
        boolean object = state == BEFORE_VALUE && b == '{';
        state = b == '"' ? 1 : 0;
        return !object;
    }

    private void openParser() {
        try {
            parser = JSON.createNonBlockingByteBufferParser();
        } catch (IOException e) {
            failed = true;
            return;
        }
        fed = 0;
        depth = 0;
        inDetails = false;
        objectPrompt = -1;
        objectCached = -1;
    }

    /** Feeds {@code [from, end)} to the usage object's parser; returns where scanning goes on. */
    private int parse(ByteBuf part, int from, int end) {
        JsonParser p = parser;
        if (p == null) {
            return end;
        }
        long fedBefore = fed;
        try {
            ((ByteBufferFeeder) p.getNonBlockingInputFeeder()).feedInput(part.nioBuffer(from, end - from));
            fed += end - from;
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
                        depth--;
                        if (depth == 0) {
                            promptTokens = objectPrompt;
                            cachedTokens = objectCached;
                            long consumed = p.currentLocation().getByteOffset();
                            closeParser();
                            return from + (int) (consumed - fedBefore);
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
        } catch (IOException malformed) {
            failed = true;
            closeParser();
        }
        return end;
    }

    private void closeParser() {
        try {
            parser.close();
        } catch (IOException ignored) {
            // Nothing to release: the parser reads no stream of its own.
        }
        parser = null;
        state = 0;
    }
}
