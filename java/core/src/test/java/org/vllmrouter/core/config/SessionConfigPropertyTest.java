package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.property.Generator;
import org.vllmrouter.core.property.Property;
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

    @Test
    void theDefaultsAreUpstreamsSources() {
        RouterConfig c = RouterConfig.defaults();
        assertEquals(List.of("x-session-id", "x-user-id", "x-tenant-id", "x-correlation-id", "x-request-id",
                "x-trace-id"), c.sessionIdHeaders());
        assertEquals(List.of("session_params.session_id", "user", "session_id", "user_id"), c.sessionIdBodyFields());
        assertEquals(1_000_000, c.maxSessions());
    }

    @Test
    void emptyListsAreValid() throws Exception {
        RouterConfig c = read(Map.of("session_id_headers", List.of(), "session_id_body_fields", List.of()));
        assertDoesNotThrow(c::validate);
    }

    /** The path and header shapes validation must judge; each is also tried alone. */
    private static final List<String> NAME_SHAPES =
            List.of("", ".", "a.", ".a", "a..b", "a.b.c", "x y", "x:y", "x\r\ny", "é");

    /** Names of every sort: token-like, any text, and the shapes above. */
    private static final Generator<List<String>> NAMES = Generator.oneOf(
            Generator.strings(Generator.ASCII_LETTERS + "-_.", 0, 12),
            Generator.anyText(6),
            Generator.elements(NAME_SHAPES).withEdgeCases(NAME_SHAPES))
            .lists(0, 4);

    @Test
    void anyListValidationAcceptsBuildsAnExtractor() {
        Property.forAll(200, NAMES, NAMES, (headers, fields) -> {
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
        });
    }

    private static final Generator<String> NOT_TOKENS = Generator.anyText(10)
            .filter(s -> s.isEmpty() || !s.chars().allMatch(ch -> Character.isLetterOrDigit(ch) && ch < 128
                    || "!#$%&'*+-.^_`|~".indexOf(ch) >= 0));

    @Test
    void headerNamesOutsideTheTokenAlphabetAreRejected() {
        Property.forAll(200, NOT_TOKENS, name -> {
            RouterConfig c = read(Map.of("session_id_headers", List.of("x-session-id", name)));
            ConfigException e = assertThrows(ConfigException.class, c::validate);
            assertOneLineNaming("session_id_headers", e);
        });
    }

    @Test
    void maxSessionsBelowOneIsRejected() {
        Property.forAll(200, Generator.ints(Integer.MIN_VALUE, 0), max -> {
            RouterConfig c = read(Map.of("max_sessions", max));
            ConfigException e = assertThrows(ConfigException.class, c::validate);
            assertEquals(ConfigValidator.PREFIX + "Invalid value for field 'max_sessions': " + max + " - Must be > 0",
                    e.getMessage());
        });
    }

    private static final Generator<String> SESSION_FIELDS =
            Generator.elements("session_id_headers", "session_id_body_fields", "max_sessions");

    /** JSON values of every type but the right one (except a whole number, right for max_sessions), null included. */
    private static final Generator<Object> WRONG_TYPES = Generator.oneOf(
            Generator.anyText(8),
            Generator.finiteDoubles(),
            Generator.booleans(),
            Generator.constant(Map.of("a", 1)),
            Generator.ints(Integer.MIN_VALUE, Integer.MAX_VALUE).lists(1, 3),
            Generator.constant(null));

    /** A value of the wrong JSON type for a session setting is an error naming the field, whatever the value. */
    @Test
    void wrongJsonTypesNameTheField() {
        Property.forAll(200, WRONG_TYPES, SESSION_FIELDS, (value, field) -> {
            if (field.equals("max_sessions") && value instanceof Integer) {
                return;
            }
            ConfigException e = assertThrows(ConfigException.class,
                    () -> RouterConfig.fromJson(JSON.writeValueAsString(Collections.singletonMap(field, value))));
            assertOneLineNaming(field, e);
        });
    }
}
