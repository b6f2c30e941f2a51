package org.vllmrouter.core.session;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.ObjectCodec;
import com.fasterxml.jackson.core.io.CharTypes;
import com.fasterxml.jackson.core.io.IOContext;
import com.fasterxml.jackson.core.json.ByteSourceJsonBootstrapper;
import com.fasterxml.jackson.core.json.UTF8StreamJsonParser;
import com.fasterxml.jackson.core.sym.ByteQuadsCanonicalizer;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Jackson's factory, whose parsers over a byte array skip runs of integers (a request's token ids) without making a
 * token of each, and pass over the plain text of a skipped string eight bytes at a time.
 *
 * <p>The router checks every request body and reads only a few of its fields; the rest it skips, and Jackson skips an
 * array one token at a time, each number read into its text buffer. A SkyRL generate request is mostly its prompt's
 * token ids, and skipping them one token at a time costs far more than skipping the same bytes of prompt text (figures
 * in docs/perf/cpu-per-request.md). Here {@link JsonParser#skipChildren} passes over the leading integers of each array it
 * meets (the skipped one and any nested in it) in one loop, and moves the array's entry count on as if Jackson had read
 * them: integers in their plain form ({@code -?(0|[1-9][0-9]*)}, at most 18 digits) separated by commas, spaces and
 * tabs. Anything else (a fraction, an exponent, a leading zero, a line break, a nested value, a missing or trailing
 * comma, the end of the input) stops the run there and Jackson reads on, so the documents accepted and the errors
 * reported, with their line and column, are Jackson's (a property test compares the two on generated input). Parsers
 * over a stream (bodies over 1 MiB) and over encodings other than UTF-8 are Jackson's own.
 *
 * <p>Most of a chat or completion request is the text of its strings (prompts, messages), which the router checks and
 * skips without reading. Jackson's skip looks each byte up in a table, and with prompts of a few KiB that loop
 * stood out in the engine's CPU profile under load. Here the runs of a skipped string's bytes
 * that Jackson's loop would pass without acting on them (printable ASCII other than the quote and the backslash) are
 * passed eight bytes to a step. An escape between runs is decoded by Jackson's own method, as its loop does,
 * and the runs go on after it; the end quote ends the string; a control character or a byte of a multi-byte
 * character hands the rest of the string to Jackson's loop, which handles it as before.
 */
public final class FastSkipJsonFactory extends JsonFactory {
    private static final long serialVersionUID = 1L;
    /** Longer integers are left to Jackson, which checks them against its number length limit. */
    private static final int MAX_DIGITS = 18;
    private static final VarHandle LONG_AT = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long EVERY_BYTE = 0x0101010101010101L;
    private static final long HIGH_BITS = 0x8080808080808080L;
    /** Jackson's table for a string's bytes: 0 for those its string loop passes without acting. */
    private static final int[] STRING_CODES = CharTypes.getInputCodeUtf8();

    @Override
    protected JsonParser _createParser(byte[] data, int offset, int len, IOContext ctxt) throws IOException {
        // The encoding Jackson would detect (UTF-16 and UTF-32 get its own parsers); a UTF-8 byte order mark is
        // passed over as Jackson passes over it.
        if (new ByteSourceJsonBootstrapper(ctxt, data, offset, len).detectEncoding() != JsonEncoding.UTF8
                || !Feature.CANONICALIZE_FIELD_NAMES.enabledIn(_factoryFeatures)) {
            return super._createParser(data, offset, len, ctxt);
        }
        int bom = len >= 3 && data[offset] == ByteSourceJsonBootstrapper.UTF8_BOM_1
                && data[offset + 1] == ByteSourceJsonBootstrapper.UTF8_BOM_2
                && data[offset + 2] == ByteSourceJsonBootstrapper.UTF8_BOM_3 ? 3 : 0;
        return new Parser(ctxt, _parserFeatures, _objectCodec,
                _byteSymbolCanonicalizer.makeChildOrPlaceholder(_factoryFeatures), data, offset + bom, offset + len,
                bom);
    }

    private static final class Parser extends UTF8StreamJsonParser {
        Parser(IOContext ctxt, int features, ObjectCodec codec, ByteQuadsCanonicalizer symbols, byte[] data,
               int start, int end, int bytesPreProcessed) {
            super(ctxt, features, null, codec, symbols, data, start, end, bytesPreProcessed, false);
        }

        /**
         * Jackson's skip (every token up to the matching end), where each array, the outer one and any nested in it,
         * first has its leading integers passed over.
         */
        @Override
        public JsonParser skipChildren() throws IOException {
            if (_currToken != JsonToken.START_ARRAY && _currToken != JsonToken.START_OBJECT) {
                return this;
            }
            if (_currToken == JsonToken.START_ARRAY) {
                skipLeadingIntegers();
            }
            int open = 1;
            while (true) {
                JsonToken token = nextToken();
                if (token == null) {
                    _handleEOF();
                    return this;
                }
                if (token.isStructStart()) {
                    open++;
                    if (token == JsonToken.START_ARRAY) {
                        skipLeadingIntegers();
                    }
                } else if (token.isStructEnd() && --open == 0) {
                    return this;
                }
            }
        }

        /**
         * Skips the string the parser stands on: plain runs eight bytes to a step, escapes decoded by Jackson as its
         * own loop decodes them, and from the first control character or non-ASCII byte on, Jackson's loop itself.
         */
        @Override
        protected void _skipString() throws IOException {
            byte[] buffer = _inputBuffer;
            int end = _inputEnd;
            int at = _inputPtr;
            while (true) {
                at = plainRunEnd(buffer, at, end);
                // The eight bytes after a run hold a byte Jackson acts on (or are the input's last few).
                while (at < end && STRING_CODES[buffer[at] & 0xff] == 0) {
                    at++;
                }
                if (at == end) {
                    break;
                }
                int c = buffer[at] & 0xff;
                if (c == '"') {
                    _inputPtr = at + 1;
                    _tokenIncomplete = false;
                    return;
                }
                if (c != '\\') {
                    break;
                }
                _inputPtr = at + 1;
                _decodeEscaped();
                at = _inputPtr;
            }
            _inputPtr = at;
            super._skipString();
        }

        /**
         * Moves past the array's leading integers and the commas between them, stopping after the last one, and
         * leaves the parser as Jackson would after reading that one (nothing changes when the array does not start
         * with one).
         */
        private void skipLeadingIntegers() {
            byte[] buffer = _inputBuffer;
            int end = _inputEnd;
            int passed = _inputPtr;
            int values = 0;
            int at = spaces(buffer, passed, end);
            while (true) {
                int after = integerEnd(buffer, at, end);
                if (after < 0) {
                    break;
                }
                passed = after;
                values++;
                int comma = spaces(buffer, after, end);
                if (comma >= end || buffer[comma] != ',') {
                    break;
                }
                at = spaces(buffer, comma + 1, end);
            }
            if (values == 0) {
                return;
            }
            _inputPtr = passed;
            // Jackson counts an array's entries in its context and expects a comma before every one but the first;
            // its errors name the last token read.
            for (int i = 0; i < values; i++) {
                _parsingContext.expectComma();
            }
            _currToken = JsonToken.VALUE_NUMBER_INT;
        }
    }

    /**
     * Where the run of plain bytes at {@code from} stops being passed over: the start of the first eight bytes that are
     * not all plain, or of the last fewer than eight before {@code end}, which Jackson's loop reads one at a time.
     */
    static int plainRunEnd(byte[] buffer, int from, int end) {
        int i = from;
        while (i <= end - Long.BYTES && allPlain((long) LONG_AT.get(buffer, i))) {
            i += Long.BYTES;
        }
        return i;
    }

    /**
     * Whether all eight bytes of {@code word} are plain: from 0x20 to 0x7f, neither the quote nor the backslash, the
     * bytes Jackson's string loop passes without acting. A byte below 0x20 sets its high bit when 0x20 is taken from
     * it, the quote and the backslash when 1 is taken from them after they are turned to 0 by an exclusive or, and a
     * byte of 0x80 or over has it already. No other byte of a word in which all bytes are below 0x80 sets it, except
     * by a borrow from a lower byte that does, so a word with no high bit set has no byte that needs Jackson.
     */
    static boolean allPlain(long word) {
        long below = word - 0x20 * EVERY_BYTE;
        long quote = (word ^ ('"' * EVERY_BYTE)) - EVERY_BYTE;
        long backslash = (word ^ ('\\' * EVERY_BYTE)) - EVERY_BYTE;
        return ((below | quote | backslash | word) & HIGH_BITS) == 0;
    }

    private static int spaces(byte[] buffer, int from, int end) {
        int i = from;
        while (i < end && (buffer[i] == ' ' || buffer[i] == '\t')) {
            i++;
        }
        return i;
    }

    /** Where the plain integer at {@code from} ends, when one is there whole and a separator follows it; else -1. */
    private static int integerEnd(byte[] buffer, int from, int end) {
        int i = from;
        if (i < end && buffer[i] == '-') {
            i++;
        }
        if (i >= end) {
            return -1;
        }
        byte first = buffer[i++];
        if (first >= '1' && first <= '9') {
            int limit = Math.min(end, i + MAX_DIGITS - 1);
            while (i < limit && buffer[i] >= '0' && buffer[i] <= '9') {
                i++;
            }
        } else if (first != '0') {
            return -1;
        }
        if (i >= end) {
            return -1;
        }
        byte next = buffer[i];
        return next == ',' || next == ']' || next == ' ' || next == '\t' || next == '\n' || next == '\r' ? i : -1;
    }
}
