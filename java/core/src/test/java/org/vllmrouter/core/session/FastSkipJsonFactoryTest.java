package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * The fast skip of integer arrays changes nothing but speed: on generated bodies, well-formed and not, a walk that
 * skips every array sees the same tokens, stands at the same place after each skip, and fails with the same message
 * (line and column included) as with Jackson's own factory.
 */
class FastSkipJsonFactoryTest {
    private static final JsonFactory JACKSON = new JsonFactory();
    private static final JsonFactory FAST = new FastSkipJsonFactory();

    /** Pieces of array content: integers of every form, separators, white space, and what must stop the fast run. */
    private static final List<String> PIECES = List.of(
            "1", "7", "42", "65535", "151643", "-3", "0", "-0", "123456789012345678", "1234567890123456789",
            "12345678901234567890123", ",", ",", ",", ", ", ",\t", " ", "\t", "\n", "\r\n", ",,", "]", "[", "[1,2]",
            "01", "-", "+1", "1.5", "1e5", "2E-3", "0.0", "-01", "1x", "\"id\"", "true", "null", "{\"a\":1}", "{");

    @Provide
    Arbitrary<String> arrayContent() {
        return Arbitraries.of(PIECES).list().ofMaxSize(40).map(pieces -> String.join("", pieces));
    }

    @Provide
    Arbitrary<String> tokenIds() {
        return Arbitraries.integers().between(0, 200_000).list().ofMaxSize(300)
                .map(ids -> ids.stream().map(String::valueOf).reduce((a, b) -> a + "," + b).orElse(""));
    }

    @Property(tries = 10000)
    void skippingArraysGivesJacksonsTokensPlacesAndErrors(@ForAll("arrayContent") String first,
                                                          @ForAll("arrayContent") String second,
                                                          @ForAll @IntRange(min = 0, max = 100) int cutPercent) {
        byte[] whole = bytes("{\"model\":\"m\",\"token_ids\":[" + first + "],\"sampling_params\":{\"n\":1},"
                + "\"batch\":[[" + second + "]," + first + "],\"input\":{\"ids\":[" + second + "]}}");
        // Some documents end early: inside a number, after a comma, before a closing bracket.
        int length = cutPercent == 100 ? whole.length : whole.length * cutPercent / 100;
        assertEquals(walk(JACKSON, whole, 3, length), walk(FAST, whole, 3, length));
    }

    @Property(tries = 300)
    void wellFormedTokenIdsAreSkippedToTheirEnd(@ForAll("tokenIds") String ids) {
        // Top-level, batched (nested arrays) and inside an object.
        for (String value : List.of("[" + ids + "]", "[[" + ids + "],[" + ids + "]]", "{\"ids\":[" + ids + "]}")) {
            byte[] doc = bytes("{\"token_ids\":" + value + ",\"model\":\"m\"}");
            List<String> tokens = walk(FAST, doc, 0, doc.length);
            assertEquals(walk(JACKSON, doc, 0, doc.length), tokens);
            assertTrue(tokens.contains("FIELD_NAME model"), tokens.toString());
        }
    }

    /** Found by the property: Jackson's errors name the last token read, here the integer before the cut. */
    @Example
    void anInputCutAfterSkippedIntegersFailsAsJacksonsDoes() {
        for (String doc : List.of("{\"t\":[1,-", "{\"t\":[1,2", "{\"t\":[1,2 ", "{\"t\":[7,01]}", "{\"t\":[7 8]}")) {
            byte[] b = bytes(doc);
            List<String> fast = walk(FAST, b, 0, b.length);
            assertEquals(walk(JACKSON, b, 0, b.length), fast);
            assertTrue(fast.get(fast.size() - 1).contains("Exception"), fast.toString());
        }
    }

    @Example
    void aByteOrderMarkAndOtherEncodingsAreJacksons() {
        byte[] bom = concat(List.of(new byte[] {(byte) 0xef, (byte) 0xbb, (byte) 0xbf}, bytes("{\"a\":[1,2, 3]} x")));
        assertEquals(walk(JACKSON, bom, 0, bom.length), walk(FAST, bom, 0, bom.length));
        byte[] utf16 = "{\"a\":[1,2]}".getBytes(StandardCharsets.UTF_16BE);
        assertEquals(walk(JACKSON, utf16, 0, utf16.length), walk(FAST, utf16, 0, utf16.length));
    }

    /**
     * Every token (field names with their name; each array and nested object skipped whole, then where the parser
     * stands) up to the end or the first error, which ends the list.
     */
    private static List<String> walk(JsonFactory factory, byte[] data, int offset, int length) {
        byte[] framed = new byte[offset + length + 5];
        System.arraycopy(data, 0, framed, offset, length);
        List<String> seen = new ArrayList<>();
        try (JsonParser p = factory.createParser(framed, offset, length)) {
            JsonToken token;
            while ((token = p.nextToken()) != null) {
                seen.add(token == JsonToken.FIELD_NAME ? "FIELD_NAME " + p.currentName() : token.name());
                boolean nestedObject = token == JsonToken.START_OBJECT && !p.getParsingContext().getParent().inRoot();
                if (token == JsonToken.START_ARRAY || nestedObject) {
                    p.skipChildren();
                    JsonLocation at = p.currentLocation();
                    seen.add(p.currentToken() + " at " + at.getByteOffset() + " " + at.getLineNr() + ":"
                            + at.getColumnNr() + " in " + p.getParsingContext().typeDesc());
                }
            }
        } catch (IOException e) {
            seen.add(e.getClass().getName() + ": " + e.getMessage());
        }
        return seen;
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
