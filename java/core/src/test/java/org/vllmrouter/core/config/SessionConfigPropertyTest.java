package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.vllmrouter.core.session.SessionIdExtractor;

/**
 * The session settings (session_id_headers, session_id_body_fields, max_sessions) against generated input: what
 * validation accepts the extractor can be built from, and whatever it rejects is one line naming the field.
 */
class SessionConfigPropertyTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static RouterConfig read(Map<String, Object> fields) throws JsonProcessingException, ConfigException {
        return RouterConfig.fromJson(JSON.writeValueAsString(fields));
    }

    private static void assertOneLineNaming(String field, ConfigException e) {
        assertTrue(e.getMessage().contains("'" + field + "'"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }

    @Example
    void theDefaultsAreUpstreamsSources() {
        RouterConfig c = RouterConfig.defaults();
        assertEquals(List.of("x-session-id", "x-user-id", "x-tenant-id", "x-correlation-id", "x-request-id",
                "x-trace-id"), c.sessionIdHeaders());
        assertEquals(List.of("session_params.session_id", "user", "session_id", "user_id"), c.sessionIdBodyFields());
        assertEquals(1_000_000, c.maxSessions());
    }

    @Example
    void emptyListsAreValid() throws Exception {
        RouterConfig c = read(Map.of("session_id_headers", List.of(), "session_id_body_fields", List.of()));
        assertDoesNotThrow(c::validate);
    }

    @Property(tries = 200)
    void anyListValidationAcceptsBuildsAnExtractor(@ForAll("names") List<String> headers,
                                                   @ForAll("names") List<String> fields) throws Exception {
        RouterConfig c = read(Map.of("session_id_headers", headers, "session_id_body_fields", fields));
        try {
            c.validate();
        } catch (ConfigException e) {
            assertTrue(e.getMessage().startsWith(ConfigValidator.PREFIX + "Invalid value for field 'session_id_"),
                    e.getMessage());
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
            return;
        }
        assertDoesNotThrow(() -> new SessionIdExtractor(c.sessionIdHeaders(), c.sessionIdBodyFields()));
    }

    @Provide
    Arbitrary<List<String>> names() {
        Arbitrary<String> name = Arbitraries.oneOf(
                Arbitraries.strings().alpha().withChars("-_.").ofMaxLength(12),
                Arbitraries.strings().all().ofMaxLength(6),
                Arbitraries.of("", ".", "a.", ".a", "a..b", "a.b.c", "x y", "x:y", "x\r\ny", "é"));
        return name.list().ofMaxSize(4);
    }

    @Property(tries = 200)
    void headerNamesOutsideTheTokenAlphabetAreRejected(@ForAll("notTokens") String name) throws Exception {
        RouterConfig c = read(Map.of("session_id_headers", List.of("x-session-id", name)));
        ConfigException e = assertThrows(ConfigException.class, c::validate);
        assertOneLineNaming("session_id_headers", e);
    }

    @Provide
    Arbitrary<String> notTokens() {
        return Arbitraries.strings().all().ofMaxLength(10)
                .filter(s -> s.isEmpty() || !s.chars().allMatch(ch -> Character.isLetterOrDigit(ch) && ch < 128
                        || "!#$%&'*+-.^_`|~".indexOf(ch) >= 0));
    }

    @Property(tries = 200)
    void maxSessionsBelowOneIsRejected(@ForAll @IntRange(min = Integer.MIN_VALUE, max = 0) int max) throws Exception {
        RouterConfig c = read(Map.of("max_sessions", max));
        ConfigException e = assertThrows(ConfigException.class, c::validate);
        assertEquals(ConfigValidator.PREFIX + "Invalid value for field 'max_sessions': " + max + " - Must be > 0",
                e.getMessage());
    }

    /** A value of the wrong JSON type for a session setting is an error naming the field, whatever the value. */
    @Property(tries = 200)
    void wrongJsonTypesNameTheField(@ForAll("wrongTypes") Object value, @ForAll("sessionFields") String field) {
        if (field.equals("max_sessions") && value instanceof Integer) {
            return;
        }
        ConfigException e = assertThrows(ConfigException.class,
                () -> RouterConfig.fromJson(JSON.writeValueAsString(java.util.Collections.singletonMap(field, value))));
        assertOneLineNaming(field, e);
    }

    @Provide
    Arbitrary<String> sessionFields() {
        return Arbitraries.of("session_id_headers", "session_id_body_fields", "max_sessions");
    }

    @Provide
    Arbitrary<Object> wrongTypes() {
        return Arbitraries.oneOf(
                Arbitraries.strings().ofMaxLength(8).map(s -> (Object) s),
                Arbitraries.doubles().map(d -> (Object) d),
                Arbitraries.of(true, false).map(b -> (Object) b),
                Arbitraries.just(Map.of("a", 1)).map(m -> (Object) m),
                Arbitraries.integers().list().ofMinSize(1).ofMaxSize(3).map(l -> (Object) l),
                Arbitraries.just((Object) null));
    }
}
