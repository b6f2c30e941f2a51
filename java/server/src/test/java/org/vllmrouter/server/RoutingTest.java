package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.CapturedRequest;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/** Regular-mode routing over real sockets: one mock (3 workers) and one sticky router for the whole class. */
@ExtendWith(NoLeaks.class)
class RoutingTest {
    static final int BODY_LIMIT = 64 * 1024;
    static MockWorkers mock;
    static RouterServer router;
    static String base;

    @BeforeAll
    static void start() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(3).build());
        Map<String, Object> cfg = Fixture.base(mock.urls());
        cfg.put("max_payload_size", BODY_LIMIT);
        router = Fixture.start(cfg);
        base = router.url();
    }

    @AfterAll
    static void stop() {
        router.close();
        mock.close();
    }

    @AfterEach
    void sessionsAreReleased() throws Exception {
        assertEquals(0, router.sessionStats().activeSessions(), "a test left sessions behind");
        for (MockWorker w : mock.workers()) {
            w.knobs().slowStreamMs(0);
        }
    }

    @Test
    void healthLivenessReadiness() throws Exception {
        HttpResponse<String> health = TestHttp.get(base + "/health");
        assertEquals(200, health.statusCode());
        assertEquals("All servers healthy", health.body());
        HttpResponse<String> live = TestHttp.get(base + "/liveness");
        assertEquals(200, live.statusCode());
        assertEquals("OK", live.body());
        JsonNode ready = TestHttp.json(TestHttp.get(base + "/readiness"));
        assertEquals("ready", ready.get("status").asText());
        assertEquals(3, ready.get("healthy_workers").asInt());
        assertEquals(3, ready.get("total_workers").asInt());
        assertEquals(405, TestHttp.post(base + "/health", "").statusCode());
    }

    @Test
    void everyResponseCarriesARequestId() throws Exception {
        HttpResponse<String> generated = TestHttp.post(base + "/v1/chat/completions", TestHttp.chat("m", "hi"));
        assertEquals(200, generated.statusCode());
        String id = generated.headers().firstValue("x-request-id").orElseThrow();
        assertTrue(id.matches("chatcmpl-[A-Za-z0-9]{24}"), id);
        HttpResponse<String> given = TestHttp.get(base + "/liveness", "x-correlation-id", "abc-123");
        assertEquals("abc-123", given.headers().firstValue("x-request-id").orElseThrow());
        HttpResponse<String> rejected = TestHttp.post(base + "/v1/completions", "[1,2]");
        assertEquals(400, rejected.statusCode());
        assertTrue(rejected.headers().firstValue("x-request-id").orElseThrow().startsWith("cmpl-"));
    }

    @Test
    void bodyAndQueryReachTheWorkerByteForByte() throws Exception {
        String body = "{ \"model\" : \"m\", \"prompt\":\"hello\",\n \"x_custom\": {\"k\": [1, 2.50, \"\\u00e9\"]}, \"cache_salt\":\"s\" }";
        HttpResponse<String> response = TestHttp.post(base + "/v1/completions?trace=1&x=%20y", body,
                "Content-Type", "application/json", "X-Custom-Header", "kept");
        assertEquals(200, response.statusCode());
        CapturedRequest seen = lastCaptured("/v1/completions");
        assertEquals(body, seen.bodyText());
        assertEquals("/v1/completions?trace=1&x=%20y", seen.uri());
        assertEquals("kept", seen.header("x-custom-header"));
    }

    @Test
    void streamEventsReachTheClientWhileTheWorkerIsStillGenerating() throws Exception {
        // The mock's second event waits slow-stream-ms; an hour means "not before this test lets go of the stream",
        // so the first event can only have reached the client by being relayed on its own.
        for (MockWorker w : mock.workers()) {
            w.knobs().slowStreamMs(TimeUnit.HOURS.toMillis(1));
        }
        String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hold\"}],\"max_tokens\":5,\"stream\":true}";
        try (Socket client = new Socket("127.0.0.1", router.port())) {
            client.setSoTimeout(30_000);
            client.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
            BufferedReader reader = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
            assertEquals("HTTP/1.1 200 OK", reader.readLine());
            String line;
            do {
                line = reader.readLine();
                assertNotNull(line, "the stream ended before its first event");
            } while (!line.startsWith("data:"));
            assertEquals(1, mock.workers().stream().mapToInt(MockWorker::inFlight).sum(), "the worker is mid-stream");
        }
        // Leaving mid-stream closes the worker connection, which is how the worker learns to stop generating.
        assertTrue(ResilienceTest.eventually(() -> mock.workers().stream().mapToInt(MockWorker::inFlight).sum() == 0),
                "the worker saw the client leave");
        assertTrue(ResilienceTest.eventually(() -> router.workers().all().stream().mapToInt(Worker::load).sum() == 0),
                "worker load released");
    }

    @Test
    void streamIsRelayedToTheEnd() throws Exception {
        String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"stream please\"}],\"max_tokens\":5,\"stream\":true}";
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpResponse<InputStream> response = TestHttp.CLIENT.send(request, HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, response.statusCode());
        assertTrue(response.headers().firstValue("content-type").orElseThrow().startsWith("text/event-stream"));
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
            List<String> events = reader.lines().filter(l -> !l.isEmpty()).toList();
            assertTrue(events.size() >= 3 && events.get(0).startsWith("data: {"), events.toString());
            assertEquals("data: [DONE]", events.get(events.size() - 1));
        }
    }

    @Test
    void sessionsStickAndBalanceThenRelease() throws Exception {
        Map<String, String> workerOf = new HashMap<>();
        for (int turn = 0; turn < 3; turn++) {
            for (int s = 0; s < 6; s++) {
                String id = "sess-" + s;
                HttpResponse<String> r = TestHttp.post(base + "/v1/chat/completions",
                        TestHttp.chat("m", "turn " + turn + " of " + id), "X-Session-ID", id);
                assertEquals(200, r.statusCode(), r.body());
                String worker = r.headers().firstValue("x-worker-id").orElseThrow();
                String before = workerOf.putIfAbsent(id, worker);
                if (before != null) {
                    assertEquals(before, worker, "session " + id + " moved");
                }
            }
        }
        assertEquals(6, router.sessionStats().activeSessions());
        JsonNode sessions = TestHttp.json(TestHttp.get(base + "/sessions"));
        assertEquals(6, sessions.get("active_sessions").asInt());
        sessions.get("active_by_worker").forEach(count -> assertEquals(2, count.asInt()));
        assertEquals(TestHttp.get(base + "/sessions").body(), new ObjectMapper().writeValueAsString(router.sessionsAnswer()),
                "in-process callers get /sessions' answer");
        assertEquals("memory", sessions.get("session_store").asText());
        assertFalse(sessions.get("degraded").asBoolean());
        assertEquals(200, TestHttp.post(base + "/v1/chat/completions", TestHttp.chat("m", "no session")).statusCode());
        assertEquals(6, router.sessionStats().activeSessions());
        for (int s = 0; s < 6; s++) {
            HttpResponse<String> finished = TestHttp.post(base + "/finish_session?session_id=sess-" + s, "");
            assertEquals(200, finished.statusCode());
            JsonNode reply = TestHttp.json(finished);
            assertEquals("ok", reply.get("status").asText());
            assertEquals("sess-" + s, reply.get("session_id").asText());
        }
        assertEquals(0, TestHttp.json(TestHttp.get(base + "/sessions")).get("active_sessions").asInt());
    }

    @Test
    void bodySessionIdIsSticky() throws Exception {
        String first = null;
        for (int turn = 0; turn < 3; turn++) {
            String body = "{\"model\":\"m\",\"prompt\":\"turn " + turn + "\",\"session_id\":\"body-sess\"}";
            HttpResponse<String> r = TestHttp.post(base + "/v1/completions", body);
            assertEquals(200, r.statusCode());
            String worker = r.headers().firstValue("x-worker-id").orElseThrow();
            first = first == null ? worker : first;
            assertEquals(first, worker);
        }
        assertEquals(1, router.sessionStats().activeSessions());
        router.finishSession("body-sess");
    }

    @Test
    void finishSessionValidatesItsParameter() throws Exception {
        assertEquals(400, TestHttp.post(base + "/finish_session", "").statusCode());
        HttpResponse<String> empty = TestHttp.post(base + "/finish_session?session_id=", "");
        assertEquals(400, empty.statusCode());
        assertTrue(TestHttp.json(empty).get("error").get("message").asText().contains("session_id"));
        assertEquals(200, TestHttp.post(base + "/finish_session?session_id=never-seen", "").statusCode());
        assertEquals(405, TestHttp.get(base + "/finish_session?session_id=x").statusCode());
        HttpResponse<String> control = TestHttp.post(base + "/finish_session?session_id=a%01b", "");
        assertEquals(400, control.statusCode());
    }

    @Test
    void invalidSessionIdsAreRejectedWithTheReason() throws Exception {
        HttpResponse<String> tooLong = TestHttp.post(base + "/v1/completions", "{\"prompt\":\"x\"}",
                "X-Session-ID", "x".repeat(2000));
        assertEquals(400, tooLong.statusCode());
        assertTrue(TestHttp.json(tooLong).get("error").get("message").asText().contains("longer than"), tooLong.body());
        HttpResponse<String> control = TestHttp.post(base + "/v1/completions",
                "{\"prompt\":\"x\",\"session_id\":\"a\\u0001b\"}");
        assertEquals(400, control.statusCode());
        assertTrue(control.body().contains("control characters"), control.body());
        String raw = TestHttp.raw(router.port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Session-ID: a\tb\r\n"
                + "Content-Type: application/json\r\nContent-Length: 14\r\nConnection: close\r\n\r\n{\"prompt\":\"x\"}");
        assertEquals(400, TestHttp.status(raw), raw);
        assertEquals(0, router.sessionStats().activeSessions());
    }

    @Test
    void nonStringSessionIdsAreIgnored() throws Exception {
        for (String id : List.of("42", "[\"a\"]", "null", "{\"x\":1}")) {
            HttpResponse<String> r = TestHttp.post(base + "/v1/completions", "{\"prompt\":\"x\",\"session_id\":" + id + "}");
            assertEquals(200, r.statusCode(), id);
        }
        assertEquals(0, router.sessionStats().activeSessions());
    }

    @Test
    void duplicateSessionHeadersMustAgree() throws Exception {
        String request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Session-ID: a\r\nX-Session-ID: %s\r\n"
                + "Content-Type: application/json\r\nContent-Length: 14\r\nConnection: close\r\n\r\n{\"prompt\":\"x\"}";
        String differ = TestHttp.raw(router.port(), request.formatted("b"));
        assertEquals(400, TestHttp.status(differ), differ);
        assertTrue(differ.contains("Conflicting X-Session-ID"));
        String same = TestHttp.raw(router.port(), request.formatted("a"));
        assertEquals(200, TestHttp.status(same), same);
        router.finishSession("a");
    }

    @Test
    void badJsonBodiesAre400() throws Exception {
        for (String body : List.of("{\"prompt\": \"x\"", "{\"prompt\": }", "[1,2,3]", "\"text\"", "", "not json",
                "{\"a\":1} {\"b\":2}")) {
            HttpResponse<String> r = TestHttp.post(base + "/v1/chat/completions", body);
            assertEquals(400, r.statusCode(), body);
            assertTrue(TestHttp.json(r).get("error").get("message").asText().startsWith("Invalid JSON body"), r.body());
        }
    }

    @Test
    void bodyLimitIsExact() throws Exception {
        String prefix = "{\"prompt\":\"x\",\"pad\":\"";
        String suffix = "\"}";
        String atLimit = prefix + "p".repeat(BODY_LIMIT - prefix.length() - suffix.length()) + suffix;
        assertEquals(BODY_LIMIT, atLimit.length());
        assertEquals(200, TestHttp.post(base + "/v1/completions", atLimit).statusCode());
        String over = prefix + "p".repeat(BODY_LIMIT - prefix.length() - suffix.length() + 1) + suffix;
        HttpResponse<String> rejected = TestHttp.post(base + "/v1/completions", over);
        assertEquals(413, rejected.statusCode());
        assertTrue(rejected.headers().firstValue("x-request-id").isPresent());
    }

    @Test
    void contentLengthWithTransferEncodingIs400() throws Exception {
        String raw = TestHttp.raw(router.port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\n"
                + "Transfer-Encoding: chunked\r\n\r\ne\r\n{\"prompt\":\"x\"}\r\n0\r\n\r\n");
        assertEquals(400, TestHttp.status(raw), raw);
    }

    @Test
    void repeatedContentLengthsAre400InHttp11AndOneLengthInHttp10() throws Exception {
        String headers = "Host: x\r\nContent-Length: 14\r\nContent-Length: 14\r\n\r\n";
        String body = "{\"prompt\":\"x\"}";
        int seen = capturedCount("/v1/completions");
        String refused = TestHttp.raw(router.port(), "POST /v1/completions HTTP/1.1\r\n" + headers + body);
        assertEquals(400, TestHttp.status(refused), refused);
        assertTrue(refused.contains("Multiple Content-Length values"), refused);
        assertEquals(seen, capturedCount("/v1/completions"), "no worker saw the refused request");
        String folded = TestHttp.raw(router.port(), "POST /v1/completions HTTP/1.0\r\n" + headers + body);
        assertEquals(200, TestHttp.status(folded), folded);
        CapturedRequest forwarded = lastCaptured("/v1/completions");
        assertEquals(body, forwarded.bodyText());
        assertEquals(List.of("14"), forwarded.headers().stream()
                .filter(h -> h.getKey().equalsIgnoreCase("Content-Length")).map(Map.Entry::getValue).toList());
    }

    /**
     * A worker gets one Content-Length, the length of the body it gets, whether the client framed its body with a
     * length (kept as sent) or in chunks (no Transfer-Encoding goes on).
     */
    @Test
    void theWorkerGetsOneContentLengthMatchingTheForwardedBody() throws Exception {
        String body = "{\"prompt\":\"x\"}";
        String[] requests = {
                "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 014\r\n\r\n" + body,
                "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "5\r\n" + body.substring(0, 5) + "\r\n9\r\n" + body.substring(5) + "\r\n0\r\n\r\n"};
        for (String request : requests) {
            String raw = TestHttp.raw(router.port(), request);
            assertEquals(200, TestHttp.status(raw), raw);
            CapturedRequest forwarded = lastCaptured("/v1/completions");
            assertEquals(body, forwarded.bodyText());
            List<String> lengths = forwarded.headers().stream()
                    .filter(h -> h.getKey().equalsIgnoreCase("Content-Length")).map(Map.Entry::getValue).toList();
            assertEquals(1, lengths.size(), lengths.toString());
            assertEquals(body.length(), Integer.parseInt(lengths.get(0)), request);
            assertTrue(forwarded.headers().stream().noneMatch(h -> h.getKey().equalsIgnoreCase("Transfer-Encoding")));
        }
    }

    @Test
    void contentLengthsThatDisagreeAre400InEveryVersion() throws Exception {
        int seen = capturedCount("/v1/completions");
        for (String version : List.of("HTTP/1.1", "HTTP/1.0")) {
            // Read as 14 bytes, the rest would be a second request; read as 40, one request with a longer body.
            String raw = TestHttp.raw(router.port(), "POST /v1/completions " + version + "\r\nHost: x\r\n"
                    + "Connection: keep-alive\r\nContent-Length: 14\r\nContent-Length: 40\r\n\r\n"
                    + "{\"prompt\":\"x\"}GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
            assertEquals(400, TestHttp.status(raw), version + " -> " + raw);
            assertTrue(raw.contains("Multiple Content-Length values"), raw);
        }
        assertEquals(seen, capturedCount("/v1/completions"), "no worker saw a refused request");
    }

    @Test
    void unknownPathsAreProxiedWithQueryAndBody() throws Exception {
        String body = "{\"model\":\"m\",\"prompt\":\"tokenize me\",\"add_special_tokens\":false}";
        HttpResponse<String> r = TestHttp.post(base + "/tokenize?debug=1", body);
        assertEquals(200, r.statusCode(), r.body());
        CapturedRequest seen = lastCaptured("/tokenize");
        assertEquals("/tokenize?debug=1", seen.uri());
        assertEquals(body, seen.bodyText());
        assertEquals(200, TestHttp.post(base + "/v1/chat/completions/render", TestHttp.chat("m", "render")).statusCode());
        assertEquals(400, TestHttp.post(base + "/detokenize", "{broken").statusCode());
    }

    @Test
    void everyInferenceRouteReachesItsWorkerPath() throws Exception {
        Map<String, String> workerPathOf = Map.of(
                "/v1/completions", "/v1/completions",
                "/v1/chat/completions", "/v1/chat/completions",
                "/v1/embeddings", "/v1/embeddings",
                "/v1/rerank", "/v1/rerank",
                "/rerank", "/v1/rerank",
                "/v1/responses", "/v1/responses",
                "/generate", "/generate",
                "/inference/v1/generate", "/inference/v1/generate");
        String body = "{\"model\":\"m\",\"prompt\":\"p\",\"input\":\"i\",\"text\":\"t\",\"query\":\"q\","
                + "\"documents\":[\"a\",\"b\"],\"messages\":[{\"role\":\"user\",\"content\":\"c\"}],"
                + "\"token_ids\":[1,2,3],\"sampling_params\":{\"max_tokens\":2},\"max_tokens\":2}";
        for (Map.Entry<String, String> route : workerPathOf.entrySet()) {
            mock.workers().forEach(MockWorker::clearCaptured);
            HttpResponse<String> r = TestHttp.post(base + route.getKey(), body);
            assertEquals(200, r.statusCode(), route.getKey() + ": " + r.body());
            assertEquals(body, lastCaptured(route.getValue()).bodyText(), route.getKey());
        }
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrder() throws Exception {
        String one = "{\"prompt\":\"first\"}";
        String request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nRequest-Id: %s\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + one.length() + "\r\n%s\r\n" + one;
        String raw = TestHttp.rawUntilClosed(router.port(), request.formatted("pipe-1", "")
                + "GET /liveness HTTP/1.1\r\nHost: x\r\nRequest-Id: pipe-2\r\n\r\n"
                + request.formatted("pipe-3", "Connection: close\r\n"));
        int first = raw.indexOf("x-request-id: pipe-1");
        int second = raw.indexOf("x-request-id: pipe-2");
        int third = raw.indexOf("x-request-id: pipe-3");
        assertTrue(first >= 0 && first < second && second < third, raw);
    }

    @Test
    void firstWorkerGetsAndMethodChecks() throws Exception {
        assertEquals(200, TestHttp.get(base + "/v1/models").statusCode());
        assertEquals(200, TestHttp.get(base + "/get_server_info").statusCode());
        assertEquals(200, TestHttp.get(base + "/get_model_info").statusCode());
        assertEquals(200, TestHttp.get(base + "/health_generate").statusCode());
        assertEquals(405, TestHttp.get(base + "/v1/chat/completions").statusCode());
        assertEquals(501, TestHttp.method("DELETE", base + "/v1/responses/abc", null).statusCode());
        assertEquals(501, TestHttp.get(base + "/v1/responses/abc/input").statusCode());
    }

    @Test
    void prometheusListenerServesUpstreamAndSessionMetrics() throws Exception {
        TestHttp.post(base + "/v1/completions", "{\"prompt\":\"x\"}", "X-Session-ID", "metrics-sess");
        router.finishSession("metrics-sess");
        HttpResponse<String> scrape = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics");
        assertEquals(200, scrape.statusCode());
        for (String name : List.of("vllm_router_requests_total{route=\"/v1/completions\"}",
                "vllm_router_request_duration_seconds_bucket", "vllm_router_processed_requests_total",
                "vllm_router_policy_decisions_total{policy=\"sticky_least_loaded\"", "vllm_router_worker_health",
                "vllm_router_cb_state", "vllm_router_active_workers 3", "vllm_router_sticky_sessions_started_total",
                "vllm_router_sticky_sessions_released_total", "vllm_router_sticky_sessions_rebound_total",
                "vllm_router_sticky_sessions_expired_total", "vllm_router_session_store_degraded 0",
                "vllm_router_sticky_sessions_evicted_total",
                "vllm_router_http_requests_total{method=\"POST\",route=\"/v1/completions\",status_class=\"2xx\",status_code=\"200\"}")) {
            assertTrue(scrape.body().contains(name), name + " missing:\n" + scrape.body());
        }
        assertEquals(404, TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/other").statusCode());
    }

    @Test
    void methodsTheClientMakesUpShareOneMetricLabel() throws Exception {
        for (int i = 0; i < 20; i++) {
            String raw = TestHttp.raw(router.port(), "MADEUP" + i + " /nowhere HTTP/1.1\r\nHost: x\r\n"
                    + "Connection: close\r\n\r\n");
            assertEquals(405, TestHttp.status(raw), raw);
        }
        String scrape = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
        assertTrue(scrape.contains("vllm_router_http_requests_total{method=\"OTHER\",route=\"unmatched\","
                + "status_class=\"4xx\",status_code=\"405\"} 20.0"), scrape);
        assertTrue(!scrape.contains("MADEUP"), scrape);
    }

    @Test
    void corsPreflightIsAnsweredByTheRouter() throws Exception {
        HttpResponse<String> preflight = TestHttp.method("OPTIONS", base + "/v1/chat/completions", null,
                "Origin", "http://example.org", "Access-Control-Request-Method", "POST");
        assertEquals(200, preflight.statusCode());
        assertEquals("*", preflight.headers().firstValue("access-control-allow-origin").orElseThrow());
        HttpResponse<String> simple = TestHttp.get(base + "/liveness", "Origin", "http://example.org");
        assertEquals("*", simple.headers().firstValue("access-control-allow-origin").orElseThrow());
    }

    /** Routing and releasing the same ids concurrently must leave counts that add up, and nothing after release. */
    @Test
    void releaseStormsConcurrentWithRouting() throws Exception {
        List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> calls = new java.util.ArrayList<>();
        for (int i = 0; i < 120; i++) {
            String id = "storm-" + (i % 5);
            HttpRequest request = i % 3 == 0
                    ? HttpRequest.newBuilder(URI.create(base + "/finish_session?session_id=" + id))
                            .POST(HttpRequest.BodyPublishers.noBody()).build()
                    : HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                            .header("X-Session-ID", id)
                            .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"storm " + i + "\"}")).build();
            calls.add(TestHttp.CLIENT.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
        }
        for (var call : calls) {
            assertEquals(200, call.get().statusCode());
        }
        var stats = router.sessionStats();
        assertEquals(stats.activeSessions(), stats.activeByWorker().values().stream().mapToInt(Integer::intValue).sum());
        assertTrue(stats.activeSessions() <= 5);
        for (int s = 0; s < 5; s++) {
            router.finishSession("storm-" + s);
        }
        assertEquals(0, router.sessionStats().activeSessions());
        assertTrue(router.sessionStats().activeByWorker().values().stream().allMatch(c -> c == 0));
    }

    private static int capturedCount(String path) {
        return mock.workers().stream().mapToInt(w -> w.captured(path).size()).sum();
    }

    private static CapturedRequest lastCaptured(String path) {
        CapturedRequest latest = null;
        for (MockWorker w : mock.workers()) {
            for (CapturedRequest c : w.captured(path)) {
                if (latest == null || c.receivedAtMillis() >= latest.receivedAtMillis()) {
                    latest = c;
                }
            }
        }
        assertNotNull(latest, "no worker saw " + path);
        return latest;
    }
}
