package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Identity, capture and the in-process handle, over real sockets. */
class MockWorkersTest {

    static MockWorkers mock;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.builder().count(2).worker(1, k -> k.workerId("second")).build());
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    @Test
    void eachWorkerAnswersWithItsIdentity() throws Exception {
        assertEquals(2, mock.size());
        HttpResponse<String> a = Http.get(mock.urls().get(0) + "/health");
        HttpResponse<String> b = Http.get(mock.urls().get(1) + "/health");
        assertEquals(200, a.statusCode());
        assertEquals("ok", a.body());
        assertEquals("worker-" + mock.ports().get(0), a.headers().firstValue("x-worker-id").orElseThrow());
        assertEquals("second", b.headers().firstValue("x-worker-id").orElseThrow());
        assertNotEquals(mock.ports().get(0), mock.ports().get(1));
        assertEquals(mock.worker(1), mock.byId("second"));
    }

    @Test
    void capturesMethodPathHeadersAndBodyBytes() throws Exception {
        MockWorker w = mock.worker(0);
        w.clearCaptured();
        String body = "{\"model\":\"m\",\"prompt\":\"hi\",\"x_unknown\":{\"a\":[1,2.50]}}";
        Http.post(w.url() + "/v1/completions?x=1", body, "X-Session-ID", "s-1");
        List<CapturedRequest> got = w.captured("/v1/completions");
        assertEquals(1, got.size());
        CapturedRequest r = got.get(0);
        assertEquals("POST", r.method());
        assertEquals("/v1/completions?x=1", r.uri());
        assertEquals("s-1", r.header("x-session-id"));
        assertEquals(body, r.bodyText());

        JsonNode listed = Http.json(Http.get(w.url() + "/captured_requests"));
        JsonNode last = listed.get(listed.size() - 1);
        assertEquals("/v1/completions", last.get("path").asText());
        assertEquals("s-1", last.get("headers").get("x-session-id").asText());
        assertEquals(body, last.get("body").asText());
    }

    @Test
    void countsInferenceRequestsOnly() throws Exception {
        MockWorker w = mock.worker(1);
        long before = w.requestCount();
        Http.get(w.url() + "/health");
        Http.post(w.url() + "/v1/completions", "{\"prompt\":\"x\"}");
        assertEquals(before + 1, w.requestCount());
        assertEquals(0, w.inFlight());
    }

    @Test
    void crashClosesTheListener() {
        try (MockWorkers one = MockWorkers.start(MockConfig.single())) {
            String url = one.urls().get(0);
            one.worker(0).crash();
            assertFalse(one.worker(0).isListening());
            assertTrue(failsToConnect(url));
        }
    }

    static boolean failsToConnect(String url) {
        try {
            Http.get(url + "/health");
            return false;
        } catch (java.io.IOException e) {
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
