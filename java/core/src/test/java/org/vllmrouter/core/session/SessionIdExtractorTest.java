package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SessionIdExtractorTest {

    private static Extraction body(String json) {
        return SessionIdExtractor.UPSTREAM.extract(HeaderLookup.NONE, BodySource.of(json));
    }

    private static Extraction headers(Map<String, String> h, String json) {
        return SessionIdExtractor.UPSTREAM.extract(HeaderLookup.of(h), BodySource.of(json));
    }

    @Test
    void headerPriorityAndEmptyValuesSkipped() {
        Map<String, String> h = new HashMap<>();
        h.put("X-Request-ID", "req-1");
        h.put("X-Session-ID", "sess-1");
        h.put("X-Unknown", "nope");
        assertEquals("sess-1", headers(h, "").sessionId());
        h.put("X-Session-ID", "");
        assertEquals("req-1", headers(h, "").sessionId());
        assertNull(headers(Map.of("x-unknown", "v"), "").sessionId());
        assertEquals("traj-42", headers(Map.of("x-trace-id", "traj-42"), "").sessionId());
    }

    @Test
    void onlyTheConfiguredHeadersCarryAnIdInTheirOrder() {
        SessionIdExtractor trainer = new SessionIdExtractor(List.of("X-Session-ID"), List.of());
        Map<String, String> gateway = Map.of("x-request-id", "req-7", "x-trace-id", "t-1");
        assertNull(trainer.extract(HeaderLookup.of(gateway), BodySource.of("{\"user\":\"u\"}")).sessionId(),
                "a gateway's request id does not start a session, nor does the body");
        Map<String, String> both = Map.of("x-request-id", "req-7", "x-session-id", "traj-3");
        assertEquals("traj-3", trainer.extract(HeaderLookup.of(both), BodySource.EMPTY).sessionId());
        SessionIdExtractor reversed = new SessionIdExtractor(List.of("x-request-id", "x-session-id"), List.of());
        assertEquals("req-7", reversed.extract(HeaderLookup.of(both), BodySource.EMPTY).sessionId());
    }

    @Test
    void configuredBodyFieldsReplaceUpstreamsInTheirOrder() {
        SessionIdExtractor ids = new SessionIdExtractor(List.of(), List.of("meta.trajectory", "session_id"));
        String json = "{\"user\":\"alice\",\"session_id\":\"s\",\"meta\":{\"trajectory\":\"t-9\"},\"model\":\"m\"}";
        Extraction e = ids.extract(HeaderLookup.NONE, BodySource.of(json));
        assertEquals("t-9", e.sessionId());
        assertEquals("m", e.model());
        assertEquals("s", ids.extract(HeaderLookup.NONE, BodySource.of("{\"user\":\"alice\",\"session_id\":\"s\"}"))
                .sessionId());
        assertNull(ids.extract(HeaderLookup.NONE, BodySource.of("{\"user\":\"alice\"}")).sessionId(),
                "user is not configured: an OpenAI user id does not pin all of a user's requests");
        String invalid = "{\"meta\":{\"trajectory\":\"a\\u0001b\"}}";
        assertEquals("Invalid session id in body field 'meta.trajectory': contains control characters",
                ids.extract(HeaderLookup.NONE, BodySource.of(invalid)).invalidReason());
    }

    @Test
    void withNoSourcesNothingIsASessionButTheModelIsRead() {
        SessionIdExtractor none = new SessionIdExtractor(List.of(), List.of());
        Extraction e = none.extract(HeaderLookup.of(Map.of("x-session-id", "s")),
                BodySource.of("{\"session_id\":\"s\",\"model\":\"m\"}"));
        assertEquals(new Extraction(null, "m", null), e);
    }

    @Test
    void headerBeatsBodyButModelIsStillRead() {
        Extraction e = headers(Map.of("x-session-id", "from-header"),
                "{\"session_id\": \"from-body\", \"model\": \"llama\"}");
        assertEquals("from-header", e.sessionId());
        assertEquals("llama", e.model());
    }

    @Test
    void bodyFieldPriority() {
        assertEquals("sp", body("{\"user_id\":\"u\",\"session_id\":\"s\",\"user\":\"usr\",\"session_params\":{\"session_id\":\"sp\"}}").sessionId());
        assertEquals("usr", body("{\"user_id\":\"u\",\"session_id\":\"s\",\"user\":\"usr\"}").sessionId());
        assertEquals("s", body("{\"user_id\":\"u\",\"session_id\":\"s\"}").sessionId());
        assertEquals("u", body("{\"user_id\":\"u\"}").sessionId());
        assertEquals("body-sess", body("{\"session_id\": \"body-sess\", \"prompt\": \"hi\"}").sessionId());
    }

    @Test
    void emptyStringsAreSkippedInFavourOfLowerPriorityFields() {
        assertEquals("s", body("{\"session_params\":{\"session_id\":\"\"},\"user\":\"\",\"session_id\":\"s\"}").sessionId());
    }

    @Test
    void escapedIdsRoundTrip() {
        Extraction e = body("{\"session_id\": \"session-\\\"quoted\\\\path\"}");
        assertEquals("session-\"quoted\\path", e.sessionId());
        assertEquals("caf\u00e9-\ud83d\ude00", body("{\"user\": \"caf\\u00e9-\\ud83d\\ude00\"}").sessionId());
    }

    @Test
    void nestedAndNullFieldsAreIgnored() {
        assertNull(body("{\"metadata\": {\"session_id\": \"nested\"}, \"prompt\": \"x\"}").sessionId());
        assertNull(body("{\"user\": null}").sessionId());
        assertNull(body("{\"messages\": [{\"role\": \"user\", \"user\": \"in-array\"}]}").sessionId());
        assertEquals("top", body("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"user\": \"top\"}").sessionId());
    }

    @ParameterizedTest
    @ValueSource(strings = {"{\"session_id\": 42}", "{\"session_id\": [\"a\"]}", "{\"session_id\": null}",
            "{\"session_id\": {\"id\": \"a\"}}", "{\"session_id\": true}", "{\"session_params\": \"sp\"}",
            "{\"session_params\": {\"session_id\": 7}}"})
    void nonStringIdsGiveNoId(String json) {
        Extraction e = body(json);
        assertNull(e.sessionId());
        assertNull(e.invalidReason());
    }

    @ParameterizedTest
    @ValueSource(strings = {"{\"session_id\": \"a\"", "{\"session_id\" \"a\"}", "not json", "{\"a\": [1, 2}",
            "{\"session_params\": {\"session_id\": \"sp\"", "\"just a string\"", "[{\"session_id\": \"a\"}]", ""})
    void malformedOrNonObjectBodyGivesNoIdAndNoException(String json) {
        Extraction e = body(json);
        assertNull(e.sessionId());
        assertNull(e.invalidReason());
    }

    @Test
    void modelIsTopLevelStringOnly() {
        assertEquals("m", body("{\"model\": \"m\", \"prompt\": \"p\"}").model());
        assertNull(body("{\"model\": 3}").model());
        assertNull(body("{\"x\": {\"model\": \"nested\"}}").model());
        assertNull(body("{}").model());
    }

    @Test
    void idOfExactlyTheLimitIsValidOneByteMoreIsInvalid() {
        String ok = "a".repeat(1024);
        assertEquals(ok, body("{\"session_id\": \"" + ok + "\"}").sessionId());
        Extraction tooLong = body("{\"session_id\": \"" + "a".repeat(1025) + "\"}");
        assertNull(tooLong.sessionId());
        assertNotNull(tooLong.invalidReason());
        assertTrue(tooLong.invalidReason().contains("longer than 1024 bytes"), tooLong.invalidReason());
        String multiByte = "\u00e9".repeat(513);
        assertNotNull(body("{\"user\": \"" + multiByte + "\"}").invalidReason(), "1026 UTF-8 bytes");
    }

    @Test
    void controlCharactersAreInvalid() {
        Extraction e = body("{\"session_id\": \"bad\\u0001id\"}");
        assertNull(e.sessionId());
        assertTrue(e.invalidReason().contains("control characters"), e.invalidReason());
        assertTrue(e.invalidReason().contains("session_id"), e.invalidReason());
        Extraction h = headers(Map.of("x-session-id", "tab\there"), "");
        assertTrue(h.invalidReason().contains("header 'x-session-id'"), h.invalidReason());
    }

    @Test
    void tenMebibyteBodyIsHandledAndGivesTheRightAnswer() {
        StringBuilder sb = new StringBuilder(11 << 20);
        sb.append("{\"model\": \"big\", \"messages\": [");
        String message = "{\"role\": \"user\", \"content\": \"" + "x".repeat(1000) + "\"},";
        while (sb.length() < (5 << 20)) {
            sb.append(message);
        }
        sb.append("{\"role\": \"user\", \"content\": \"end\"}], \"prompt\": \"")
                .append("y".repeat(5 << 20))
                .append("\", \"session_params\": {\"session_id\": \"after-10-mib\"}}");
        byte[] bytes = sb.toString().getBytes(StandardCharsets.UTF_8);
        assertTrue(bytes.length > 10 << 20);
        Extraction e = SessionIdExtractor.UPSTREAM.extract(HeaderLookup.NONE, BodySource.of(bytes, 0, bytes.length));
        assertEquals("after-10-mib", e.sessionId());
        assertEquals("big", e.model());
    }

    @Test
    void readsOnlyTheGivenSliceOfTheBuffer() {
        byte[] json = "garbage{\"session_id\": \"slice\"}garbage".getBytes(StandardCharsets.UTF_8);
        byte[] copy = Arrays.copyOf(json, json.length);
        Extraction e = SessionIdExtractor.UPSTREAM.extract(HeaderLookup.NONE, BodySource.of(copy, 7, json.length - 14));
        assertEquals("slice", e.sessionId());
    }

    @Test
    void bodyIdsReportsEveryIdentityField() {
        SessionIdExtractor.BodyIds ids = SessionIdExtractor.bodyIds(BodySource.of(
                "{\"model\":\"m\",\"user\":\"u\",\"session_id\":\"s\",\"user_id\":\"ui\",\"session_params\":{\"session_id\":\"sp\"}}"));
        assertEquals(new SessionIdExtractor.BodyIds("m", "sp", "u", "s", "ui"), ids);
    }
}
