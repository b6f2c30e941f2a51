package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.CharTypes;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.property.Generator;
import org.vllmrouter.core.property.Property;

/**
 * The fast skips of integer arrays and of plain string text change nothing but speed: on generated bodies, well-formed
 * and not, a walk that skips every array and string sees the same tokens, stands at the same place after each skip, and
 * fails with the same message (line and column included) as with Jackson's own factory.
 */
class FastSkipJsonFactoryTest {
    private static final JsonFactory JACKSON = new JsonFactory();
    private static final JsonFactory FAST = new FastSkipJsonFactory();

    /** Pieces of array content: integers of every form, separators, white space, and what must stop the fast run. */
    private static final List<String> PIECES = List.of(
            "1", "7", "42", "65535", "151643", "-3", "0", "-0", "123456789012345678", "1234567890123456789",
            "12345678901234567890123", ",", ",", ",", ", ", ",\t", " ", "\t", "\n", "\r\n", ",,", "]", "[", "[1,2]",
            "01", "-", "+1", "1.5", "1e5", "2E-3", "0.0", "-01", "1x", "\"id\"", "true", "null", "{\"a\":1}", "{");

    private static final Generator<String> ARRAY_CONTENT =
            Generator.elements(PIECES).lists(0, 40).map(pieces -> String.join("", pieces));

    /**
     * Pieces of string content, as bytes: plain runs of several lengths (so that the eight-byte steps start and stop
     * at every offset), escapes, the characters Jackson acts on, multi-byte characters, and bytes no UTF-8 text has.
     */
    private static final List<byte[]> STRING_PIECES = List.of(
            bytes("a"), bytes("Qwen"), bytes("plain text"), bytes("The agent reads the tool output. "),
            bytes("~!#$%&'()*+,-./0123456789:;<=>?@[]^_`{|}"), new byte[] {0x7f}, bytes(" "),
            bytes("\\\""), bytes("\\n"), bytes("\\\\"), bytes("\\u00e9"), bytes("\\u12"), bytes("\\x"), bytes("\\"),
            bytes("\""), bytes("\n"), bytes("\t"), new byte[] {0x01}, new byte[] {0x1f},
            bytes("é"), bytes("€"), bytes("𝄞"), bytes("日本語のテキスト"),
            new byte[] {(byte) 0x80}, new byte[] {(byte) 0xc3}, new byte[] {(byte) 0xe2, (byte) 0x82},
            new byte[] {(byte) 0xff}, new byte[] {(byte) 0xf0, 0x41});

    private static final Generator<byte[]> STRING_CONTENT =
            Generator.elements(STRING_PIECES).lists(0, 30).map(FastSkipJsonFactoryTest::concat);

    private static final Generator<String> TOKEN_IDS = Generator.ints(0, 200_000).lists(0, 300)
            .map(ids -> ids.stream().map(String::valueOf).reduce((a, b) -> a + "," + b).orElse(""));

    /** Where a document is cut, as a share of its length: 100 keeps it whole. */
    private static final Generator<Integer> CUT_PERCENT = Generator.ints(0, 100);

    @Test
    void skippingArraysGivesJacksonsTokensPlacesAndErrors() {
        Property.forAll(10_000, ARRAY_CONTENT, ARRAY_CONTENT, CUT_PERCENT, (first, second, cutPercent) -> {
            byte[] whole = bytes("{\"model\":\"m\",\"token_ids\":[" + first + "],\"sampling_params\":{\"n\":1},"
                    + "\"batch\":[[" + second + "]," + first + "],\"input\":{\"ids\":[" + second + "]}}");
            // Some documents end early: inside a number, after a comma, before a closing bracket.
            int length = cutPercent == 100 ? whole.length : whole.length * cutPercent / 100;
            assertEquals(walk(JACKSON, whole, 3, length), walk(FAST, whole, 3, length));
        });
    }

    @Test
    void wellFormedTokenIdsAreSkippedToTheirEnd() {
        Property.forAll(300, TOKEN_IDS, ids -> {
            // Top-level, batched (nested arrays) and inside an object.
            for (String value : List.of("[" + ids + "]", "[[" + ids + "],[" + ids + "]]", "{\"ids\":[" + ids + "]}")) {
                byte[] doc = bytes("{\"token_ids\":" + value + ",\"model\":\"m\"}");
                List<String> tokens = walk(FAST, doc, 0, doc.length);
                assertEquals(walk(JACKSON, doc, 0, doc.length), tokens);
                assertTrue(tokens.contains("FIELD_NAME model"), tokens.toString());
            }
        });
    }

    @Test
    void skippingStringsGivesJacksonsTokensPlacesAndErrors() {
        Property.forAll(10_000, STRING_CONTENT, STRING_CONTENT, CUT_PERCENT, (first, second, cutPercent) -> {
            byte[] whole = concat(List.of(bytes("{\"model\":\""), first, bytes("\",\"messages\":[{\"content\":\""),
                    second, bytes("\"},\""), first, bytes("\"],\""), second, bytes("\":\"\"}")));
            int length = cutPercent == 100 ? whole.length : whole.length * cutPercent / 100;
            assertEquals(walkEveryToken(JACKSON, whole, 2, length), walkEveryToken(FAST, whole, 2, length));
        });
    }

    /** Every byte value, alone and beside every other, at every place in an eight-byte step. */
    @Test
    void aStepPassesExactlyTheBytesJacksonsStringLoopPasses() {
        int[] jacksonCodes = CharTypes.getInputCodeUtf8();
        for (int b = 0; b < 256; b++) {
            boolean plain = jacksonCodes[b] == 0;
            for (int at = 0; at < 8; at++) {
                assertEquals(plain, FastSkipJsonFactory.allPlain(withByte('a', b, at)), "byte " + b + " at " + at);
                for (int c = 0; c < 256; c++) {
                    for (int at2 = at + 1; at2 < 8; at2++) {
                        long word = withByte(0, c, at2) | (withByte('a', b, at) & ~(0xffL << (8 * at2)));
                        if (FastSkipJsonFactory.allPlain(word)) {
                            assertTrue(plain && jacksonCodes[c] == 0, "bytes " + b + " at " + at + ", " + c + " at " + at2);
                        }
                    }
                }
            }
        }
    }

    @Test
    void aLongPlainRunIsPassedInStepsUpToTheFirstByteJacksonActsOn() {
        byte[] text = bytes("\"" + "x".repeat(21) + "\\n tail\"");
        // From 1 (after the opening quote): steps at 1, 9 and 17; the one at 17 holds the backslash at 22.
        assertEquals(17, FastSkipJsonFactory.plainRunEnd(text, 1, text.length));
        assertEquals(5, FastSkipJsonFactory.plainRunEnd(text, 5, 12), "fewer than eight bytes are left to Jackson");
        assertFalse(FastSkipJsonFactory.allPlain(0x2222222222222222L));
    }

    /** Found by the property: Jackson's errors name the last token read, here the integer before the cut. */
    @Test
    void anInputCutAfterSkippedIntegersFailsAsJacksonsDoes() {
        for (String doc : List.of("{\"t\":[1,-", "{\"t\":[1,2", "{\"t\":[1,2 ", "{\"t\":[7,01]}", "{\"t\":[7 8]}")) {
            byte[] b = bytes(doc);
            List<String> fast = walk(FAST, b, 0, b.length);
            assertEquals(walk(JACKSON, b, 0, b.length), fast);
            assertTrue(fast.get(fast.size() - 1).contains("Exception"), fast.toString());
        }
    }

    @Test
    void aByteOrderMarkAndOtherEncodingsAreJacksons() {
        byte[] bom = concat(List.of(new byte[] {(byte) 0xef, (byte) 0xbb, (byte) 0xbf}, bytes("{\"a\":[1,2, 3]} x")));
        assertEquals(walk(JACKSON, bom, 0, bom.length), walk(FAST, bom, 0, bom.length));
        byte[] utf16 = "{\"a\":[1,2]}".getBytes(StandardCharsets.UTF_16BE);
        assertEquals(walk(JACKSON, utf16, 0, utf16.length), walk(FAST, utf16, 0, utf16.length));
    }

    /** What a walk records of one token, the parser standing on it; it may move the parser on. */
    @FunctionalInterface
    private interface TokenRecord {
        void record(JsonParser p, JsonToken token, List<String> seen) throws IOException;
    }

    /**
     * Every token (field names with their name; each array and nested object skipped whole, then where the parser
     * stands) up to the end or the first error, which ends the list.
     */
    private static List<String> walk(JsonFactory factory, byte[] data, int offset, int length) {
        return walk(factory, data, offset, length, (p, token, seen) -> {
            seen.add(token == JsonToken.FIELD_NAME ? "FIELD_NAME " + p.currentName() : token.name());
            boolean nestedObject = token == JsonToken.START_OBJECT && !p.getParsingContext().getParent().inRoot();
            if (token == JsonToken.START_ARRAY || nestedObject) {
                p.skipChildren();
                JsonLocation at = p.currentLocation();
                seen.add(p.currentToken() + " at " + at.getByteOffset() + " " + at.getLineNr() + ":"
                        + at.getColumnNr() + " in " + p.getParsingContext().typeDesc());
            }
        });
    }

    /** Every token with where it starts and where the parser stands after it, up to the end or the first error. */
    private static List<String> walkEveryToken(JsonFactory factory, byte[] data, int offset, int length) {
        return walk(factory, data, offset, length, (p, token, seen) -> {
            JsonLocation start = p.currentTokenLocation();
            JsonLocation at = p.currentLocation();
            seen.add(token + " from " + start.getByteOffset() + " " + start.getLineNr() + ":" + start.getColumnNr()
                    + " at " + at.getByteOffset() + " " + at.getLineNr() + ":" + at.getColumnNr());
        });
    }

    /** Parses {@code length} bytes of {@code data} placed at {@code offset} in a larger array, recording each token. */
    private static List<String> walk(JsonFactory factory, byte[] data, int offset, int length, TokenRecord record) {
        byte[] framed = new byte[offset + length + 5];
        System.arraycopy(data, 0, framed, offset, length);
        List<String> seen = new ArrayList<>();
        try (JsonParser p = factory.createParser(framed, offset, length)) {
            JsonToken token;
            while ((token = p.nextToken()) != null) {
                record.record(p, token, seen);
            }
        } catch (IOException e) {
            seen.add(e.getClass().getName() + ": " + e.getMessage());
        }
        return seen;
    }

    /** {@code filler} in every byte of a word, {@code value} in byte {@code at} (the {@code at}-th in memory). */
    private static long withByte(int filler, int value, int at) {
        long word = (filler & 0xffL) * 0x0101010101010101L;
        return (word & ~(0xffL << (8 * at))) | ((value & 0xffL) << (8 * at));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] concat(List<byte[]> parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        parts.forEach(out::writeBytes);
        return out.toByteArray();
    }
}
