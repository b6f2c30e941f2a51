package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;

/** Generated requests, well-formed and not, against the extraction rules with configured sources. */
class SessionIdExtractionPropertyTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOKEN_CHARS = "!#$%&'*+-.^_`|~";

    @Provide
    Arbitrary<String> headerNames() {
        return Arbitraries.strings().alpha().numeric().withChars(TOKEN_CHARS).ofMinLength(1).ofMaxLength(24);
    }

    @Provide
    Arbitrary<String> fieldNames() {
        return Arbitraries.strings().alpha().withChars('_').ofMinLength(1).ofMaxLength(12)
                .filter(name -> !name.equals("model"));
    }

    /** Any text: control characters, surrogates (paired or not), long runs. */
    @Provide
    Arbitrary<String> anyText() {
        return Arbitraries.strings().all().ofMaxLength(1100);
    }

    @Property
    void aConfiguredHeaderYieldsExactlyItsValueOrA400Reason(@ForAll("headerNames") String header,
                                                            @ForAll("anyText") String value) {
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
            assertTrue(e.invalidReason().startsWith("Invalid session id in header '" + header.toLowerCase(Locale.ROOT)
                    + "': "), e.invalidReason());
        }
    }

    @Property
    void aHeaderNotConfiguredIsIgnored(@ForAll("headerNames") String configured, @ForAll("headerNames") String sent,
                                       @ForAll("anyText") String value) {
        String sentLower = sent.toLowerCase(Locale.ROOT);
        SessionIdExtractor extractor = new SessionIdExtractor(List.of(configured), List.of());
        Extraction e = extractor.extract(name -> name.equals(sentLower) ? value : null, BodySource.EMPTY);
        if (!configured.toLowerCase(Locale.ROOT).equals(sentLower)) {
            assertEquals(Extraction.NONE, e);
        }
    }

    @Property
    void aConfiguredBodyFieldRoundTripsAnyStringValue(@ForAll("fieldNames") String field, @ForAll("anyText") String value,
                                                      @ForAll boolean nested) throws JsonProcessingException {
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
            assertEquals("Invalid session id in body field '" + path + "': " + SessionIdExtractor.problemWith(value),
                    e.invalidReason());
        }
    }

    @Property
    void priorityFollowsTheConfiguredOrder(@ForAll @Size(min = 2, max = 5) List<@net.jqwik.api.constraints.AlphaChars
            @net.jqwik.api.constraints.StringLength(min = 1, max = 8) String> fields) throws JsonProcessingException {
        List<String> distinct = fields.stream().filter(f -> !f.equals("model")).distinct().toList();
        if (distinct.isEmpty()) {
            return;
        }
        Map<String, String> body = new java.util.LinkedHashMap<>();
        // Written lowest priority first, so the answer cannot come from the order of the body.
        for (int i = distinct.size() - 1; i >= 0; i--) {
            body.put(distinct.get(i), "id-of-" + distinct.get(i));
        }
        SessionIdExtractor extractor = new SessionIdExtractor(List.of(), distinct);
        Extraction e = extractor.extract(HeaderLookup.NONE, BodySource.of(JSON.writeValueAsBytes(body)));
        assertEquals("id-of-" + distinct.get(0), e.sessionId());
    }

    /** Whatever bytes arrive, extraction answers (an id, nothing, or a 400 reason) and never throws. */
    @Property
    void arbitraryBodiesNeverThrowAndNeverYieldAnUnusableId(@ForAll byte[] bytes, @ForAll("jsonish") String text) {
        for (BodySource body : List.of(BodySource.of(bytes), BodySource.of(text))) {
            Extraction e = SessionIdExtractor.UPSTREAM.extract(HeaderLookup.NONE, body);
            assertNotNull(e);
            if (e.sessionId() != null) {
                assertNull(SessionIdExtractor.problemWith(e.sessionId()));
                assertTrue(!e.sessionId().isEmpty());
            }
            assertTrue(e.sessionId() == null || e.invalidReason() == null);
        }
    }

    /** Fragments of plausible request bodies, glued at random: truncated, nested, mistyped. */
    @Provide
    Arbitrary<String> jsonish() {
        Arbitrary<String> piece = Arbitraries.of("{", "}", "[", "]", ",", ":", "\"session_id\"", "\"user\"",
                "\"session_params\"", "\"model\"", "\"x\"", "\"\"", "null", "42", "true", "\"\\u0000\"", "\"\\ud800\"",
                "\"\\\"\"", " ", "\"a\\\\b\"");
        return piece.list().ofMaxSize(40).map(parts -> String.join("", parts));
    }

    /** Well-formed objects whose fields are the ones extraction reads (any order, repeated, mistyped), and fragments. */
    @Provide
    Arbitrary<String> bodies() {
        Arbitrary<String> name = Arbitraries.of("model", "session_id", "user", "user_id", "session_params", "x");
        Arbitrary<Object> scalar = Arbitraries.oneOf(Arbitraries.strings().ofMaxLength(8), Arbitraries.integers(),
                Arbitraries.just(""));
        Arbitrary<Object> value = Arbitraries.oneOf(scalar,
                Arbitraries.maps(name, scalar).ofMaxSize(3).map(m -> (Object) m));
        Arbitrary<String> objects = Arbitraries.entries(name, value).list().ofMaxSize(6).map(fields -> {
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
        return Arbitraries.oneOf(objects, jsonish());
    }

    /**
     * The single pass that also checks the body answers as a check followed by the early-stopping extraction did: a
     * body the check refuses gives exactly the check's message and nothing else, any other the same extraction.
     */
    @Property
    void theCheckedPassAgreesWithACheckThenAnExtraction(@ForAll("bodies") String body, @ForAll boolean requireObject,
                                                        @ForAll boolean idHeader) {
        HeaderLookup headers = idHeader ? name -> name.equals("x-session-id") ? "from-header" : null : HeaderLookup.NONE;
        BodySource source = BodySource.of(body);
        Extraction checked = SessionIdExtractor.UPSTREAM.extractChecked(headers, source, requireObject);
        String problem = JsonBodyScan.check(source, requireObject, null);
        if (problem != null) {
            assertEquals(new Extraction(null, null, problem), checked);
        } else {
            assertEquals(SessionIdExtractor.UPSTREAM.extract(headers, source), checked);
        }
    }

    @Property
    void badFieldPathsAreRejected(@ForAll("fieldNames") String a, @ForAll("fieldNames") String b) {
        for (String bad : List.of("", ".", a + ".", "." + a, a + ".." + b, a + "." + b + "." + a)) {
            try {
                new SessionIdExtractor(List.of(), List.of(bad));
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage().contains("'" + bad + "'"), expected.getMessage());
                continue;
            }
            throw new AssertionError("accepted body field path '" + bad + "'");
        }
    }
}
