package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.property.Generator;
import org.vllmrouter.core.property.Property;

/** Generated requests, well-formed and not, against the extraction rules with configured sources. */
class SessionIdExtractionPropertyTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOKEN_CHARS = "!#$%&'*+-.^_`|~";
    private static final int TRIES = 1000;

    private static final Generator<String> HEADER_NAMES =
            Generator.strings(Generator.ASCII_LETTERS + "0123456789" + TOKEN_CHARS, 1, 24);

    private static final Generator<String> FIELD_NAMES =
            Generator.strings(Generator.ASCII_LETTERS + "_", 1, 12).filter(name -> !name.equals("model"));

    /** Any text: control characters, surrogates (paired or not), long runs. */
    private static final Generator<String> ANY_TEXT = Generator.anyText(1100);

    @Test
    void aConfiguredHeaderYieldsExactlyItsValueOrA400Reason() {
        Property.forAll(TRIES, HEADER_NAMES, ANY_TEXT, (header, value) -> {
            SessionIdExtractor extractor = new SessionIdExtractor(List.of(header), List.of());
            // Header lookups are case-insensitive in every HTTP stack the engine uses.
            Extraction e = extractor.extract(name -> name.equals(header.toLowerCase(Locale.ROOT)) ? value : null,
                    BodySource.EMPTY);
            if (value.isEmpty()) {
                assertEquals(Extraction.NONE, e);
            } else if (SessionIdExtractor.problemWith(value) == null) {
                assertEquals(value, e.sessionId(), "ids match exactly: no trimming, no truncation");
                assertNull(e.invalidReason());
            } else {
                assertNull(e.sessionId());
                assertTrue(e.invalidReason().startsWith("Invalid session id in header '"
                        + header.toLowerCase(Locale.ROOT) + "': "), e.invalidReason());
            }
        });
    }

    @Test
    void aHeaderNotConfiguredIsIgnored() {
        Property.forAll(TRIES, HEADER_NAMES, HEADER_NAMES, ANY_TEXT, (configured, sent, value) -> {
            String sentLower = sent.toLowerCase(Locale.ROOT);
            SessionIdExtractor extractor = new SessionIdExtractor(List.of(configured), List.of());
            Extraction e = extractor.extract(name -> name.equals(sentLower) ? value : null, BodySource.EMPTY);
            if (!configured.toLowerCase(Locale.ROOT).equals(sentLower)) {
                assertEquals(Extraction.NONE, e);
            }
        });
    }

    @Test
    void aConfiguredBodyFieldRoundTripsAnyStringValue() {
        Property.forAll(TRIES, FIELD_NAMES, ANY_TEXT, Generator.booleans(), (field, value, nested) -> {
            String path = nested ? "outer." + field : field;
            Map<String, Object> body = nested ? Map.of("outer", Map.of(field, value)) : Map.of(field, value);
            SessionIdExtractor extractor = new SessionIdExtractor(List.of(), List.of(path));
            Extraction e = extractor.extract(HeaderLookup.NONE, BodySource.of(JSON.writeValueAsBytes(body)));
            if (value.isEmpty()) {
                assertEquals(Extraction.NONE, e);
            } else if (SessionIdExtractor.problemWith(value) == null) {
                assertEquals(value, e.sessionId(), "escapes decoded, nothing lost");
            } else {
                assertNull(e.sessionId());
                assertEquals("Invalid session id in body field '" + path + "': "
                        + SessionIdExtractor.problemWith(value), e.invalidReason());
            }
        });
    }

    @Test
    void priorityFollowsTheConfiguredOrder() {
        Property.forAll(TRIES, Generator.strings(Generator.ASCII_LETTERS, 1, 8).lists(2, 5), fields -> {
            List<String> distinct = fields.stream().filter(f -> !f.equals("model")).distinct().toList();
            if (distinct.isEmpty()) {
                return;
            }
            Map<String, String> body = new LinkedHashMap<>();
            // Written lowest priority first, so the answer cannot come from the order of the body.
            for (int i = distinct.size() - 1; i >= 0; i--) {
                body.put(distinct.get(i), "id-of-" + distinct.get(i));
            }
            SessionIdExtractor extractor = new SessionIdExtractor(List.of(), distinct);
            Extraction e = extractor.extract(HeaderLookup.NONE, BodySource.of(JSON.writeValueAsBytes(body)));
            assertEquals("id-of-" + distinct.get(0), e.sessionId());
        });
    }

    /** Fragments of plausible request bodies, glued at random: truncated, nested, mistyped. */
    private static final Generator<String> JSONISH = Generator.elements("{", "}", "[", "]", ",", ":", "\"session_id\"",
                    "\"user\"", "\"session_params\"", "\"model\"", "\"x\"", "\"\"", "null", "42", "true", "\"\\u0000\"",
                    "\"\\ud800\"", "\"\\\"\"", " ", "\"a\\\\b\"")
            .lists(0, 40).map(parts -> String.join("", parts));

    /** Whatever bytes arrive, extraction answers (an id, nothing, or a 400 reason) and never throws. */
    @Test
    void arbitraryBodiesNeverThrowAndNeverYieldAnUnusableId() {
        Property.forAll(TRIES, Generator.byteArrays(255), JSONISH, (bytes, text) -> {
            for (BodySource body : List.of(BodySource.of(bytes), BodySource.of(text))) {
                Extraction e = SessionIdExtractor.UPSTREAM.extract(HeaderLookup.NONE, body);
                assertNotNull(e);
                if (e.sessionId() != null) {
                    assertNull(SessionIdExtractor.problemWith(e.sessionId()));
                    assertTrue(!e.sessionId().isEmpty());
                }
                assertTrue(e.sessionId() == null || e.invalidReason() == null);
            }
        });
    }

    /** Well-formed objects with the fields extraction reads (any order, repeated, mistyped), and fragments. */
    private static final Generator<String> BODIES = bodies();

    private static Generator<String> bodies() {
        Generator<String> name = Generator.elements("model", "session_id", "user", "user_id", "session_params", "x");
        Generator<Object> scalar = Generator.oneOf(Generator.anyText(8),
                Generator.ints(Integer.MIN_VALUE, Integer.MAX_VALUE), Generator.constant(""));
        Generator<Map<String, Object>> object = Generator.combine(name, scalar, Map::entry).lists(0, 3).map(entries -> {
            Map<String, Object> map = new LinkedHashMap<>();
            entries.forEach(entry -> map.put(entry.getKey(), entry.getValue()));
            return map;
        });
        Generator<Object> value = Generator.oneOf(scalar, object);
        Generator<String> objects = Generator.combine(name, value, Map::entry).lists(0, 6).map(fields -> {
            StringBuilder json = new StringBuilder("{");
            for (Map.Entry<String, Object> field : fields) {
                try {
                    json.append(json.length() > 1 ? "," : "").append(JSON.writeValueAsString(field.getKey()))
                            .append(':').append(JSON.writeValueAsString(field.getValue()));
                } catch (JsonProcessingException e) {
                    throw new AssertionError(e);
                }
            }
            return json.append('}').toString();
        });
        return Generator.oneOf(objects, JSONISH);
    }

    /**
     * The single pass that also checks the body answers as a check followed by the early-stopping extraction did: a
     * body the check refuses gives exactly the check's message and nothing else, any other the same extraction.
     */
    @Test
    void theCheckedPassAgreesWithACheckThenAnExtraction() {
        Property.forAll(TRIES, BODIES, Generator.booleans(), Generator.booleans(), (body, requireObject, idHeader) -> {
            HeaderLookup headers = idHeader ? name -> name.equals("x-session-id") ? "from-header" : null
                    : HeaderLookup.NONE;
            BodySource source = BodySource.of(body);
            Extraction checked = SessionIdExtractor.UPSTREAM.extractChecked(headers, source, requireObject);
            String problem = JsonBodyScan.check(source, requireObject, null);
            if (problem != null) {
                assertEquals(new Extraction(null, null, problem), checked);
            } else {
                assertEquals(SessionIdExtractor.UPSTREAM.extract(headers, source), checked);
            }
        });
    }

    @Test
    void badFieldPathsAreRejected() {
        Property.forAll(TRIES, FIELD_NAMES, FIELD_NAMES, (a, b) -> {
            for (String bad : List.of("", ".", a + ".", "." + a, a + ".." + b, a + "." + b + "." + a)) {
                try {
                    new SessionIdExtractor(List.of(), List.of(bad));
                } catch (IllegalArgumentException expected) {
                    assertTrue(expected.getMessage().contains("'" + bad + "'"), expected.getMessage());
                    continue;
                }
                throw new AssertionError("accepted body field path '" + bad + "'");
            }
        });
    }
}
