package org.vllmrouter.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Path normalisation: one decoded spelling per route, ambiguous encodings refused. */
class RequestPathTest {

    @ParameterizedTest
    @CsvSource({
            "/finish_session?session_id=a, /finish_session",
            "/finish_session/?session_id=a, /finish_session",
            "/FINISH_Session, /finish_session",
            "/%66inish_session, /finish_session",
            "/finish%5Fsession, /finish_session",
            "/v1/chat/completions, /v1/chat/completions",
            "/, /",
            "/caf%C3%A9, /café",
            "/workers/http%3A%2F%2Fh%3A1, /workers/{url}"})
    void routesOnTheDecodedLowerCasedPath(String uri, String routeKey) throws Exception {
        assertEquals(routeKey, RequestPath.parse(uri).routeKey());
    }

    @ParameterizedTest
    @ValueSource(strings = {"finish_session", "//finish_session", "/a//b", "/x/../finish_session", "/./x", "/x/.",
            "/%2e%2e/x", "/%2E/x", "/x%2Fy", "/x%2fy", "/x%5Cy", "/x\\y", "/x%00", "/x%0a", "/x%", "/x%4", "/x%zz",
            "/x%25", "/x%C3", "/x#frag", "http://host/x", "/x?%zz=1"})
    void ambiguousOrMalformedTargetsAreRejected(String uri) {
        assertThrows(RequestPath.InvalidPathException.class, () -> {
            RequestPath path = RequestPath.parse(uri);
            path.params().size();
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"/.well-known/x", "/x/..y", "/x./y", "/x/y..", "/...", "/x/.../y", "/v1/a.b"})
    void dotsInsideASegmentAreNotDotSegments(String uri) throws Exception {
        assertEquals(uri, RequestPath.parse(uri).path());
    }

    @org.junit.jupiter.api.Test
    void queryParametersAreDecodedAndAnAbsentOrEmptyQueryHasNone() throws Exception {
        assertEquals(java.util.Map.of(), RequestPath.parse("/v1/completions").params());
        assertEquals(java.util.Map.of(), RequestPath.parse("/v1/completions?").params());
        assertEquals(java.util.Map.of("a", java.util.List.of("1", "2"), "b", java.util.List.of(" x")),
                RequestPath.parse("/finish_session?a=1&b=%20x&a=2").params());
    }

    @org.junit.jupiter.api.Test
    void workerUrlsAndQueriesKeepTheirRawForm() throws Exception {
        RequestPath item = RequestPath.parse("/workers/http%3A%2F%2Fh%3A1");
        assertEquals("/workers/http://h:1", item.path());
        RequestPath proxied = RequestPath.parse("/tokenize?a=1&b=%20x");
        assertEquals("/tokenize?a=1&b=%20x", proxied.rawTarget());
        assertEquals(" x", proxied.param("b"));
        assertThrows(RequestPath.InvalidPathException.class,
                () -> RequestPath.parse("/finish_session?session_id=a&session_id=b").param("session_id"));
        assertEquals("a", RequestPath.parse("/finish_session?session_id=a&session_id=a").param("session_id"));
    }
}
