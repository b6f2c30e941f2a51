package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.core.worker.CircuitBreaker;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/** Retries, circuit breaking, dead workers, the limiter and client disconnects; one mock, small routers per case. */
@ExtendWith(NoLeaks.class)
class ResilienceTest {
    static MockWorkers mock;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.builder().count(3).build());
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    @AfterEach
    void resetKnobs() {
        for (MockWorker w : mock.workers()) {
            w.knobs().statusCode(200).failFirstN(0).hang(false);
        }
    }

    @Test
    void retriesUntilAWorkerAnswers() throws Exception {
        MockWorker flaky = mock.worker(0);
        long before = flaky.requestCount();
        flaky.knobs().failFirstN((int) before + 2);
        Map<String, Object> cfg = Fixture.base(List.of(flaky.url()));
        cfg.put("retry_max_retries", 3);
        try (RouterServer router = Fixture.start(cfg)) {
            HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}");
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(before + 3, flaky.requestCount());
            String metrics = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
            assertTrue(metrics.contains("vllm_router_retries_total{route=\"/v1/completions\"} 2"), metrics);
        }
    }

    @Test
    void exhaustedRetriesRelayTheLastAnswer() throws Exception {
        MockWorker failing = mock.worker(0);
        failing.knobs().statusCode(503);
        long before = failing.requestCount();
        Map<String, Object> cfg = Fixture.base(List.of(failing.url()));
        cfg.put("retry_max_retries", 2);
        try (RouterServer router = Fixture.start(cfg)) {
            HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}");
            assertEquals(503, r.statusCode());
            assertTrue(r.body().contains("mock fault"), r.body());
            assertEquals(before + 2, failing.requestCount());
            assertEquals(0, router.workers().all().get(0).load());
        }
    }

    private static Map<String, Object> breakerConfig(MockWorker bad, MockWorker good, int openSecs) {
        Map<String, Object> cfg = Fixture.base(List.of(bad.url(), good.url()));
        cfg.put("policy", "round_robin");
        cfg.put("disable_retries", true);
        cfg.put("cb_failure_threshold", 2);
        cfg.put("cb_success_threshold", 1);
        cfg.put("cb_timeout_duration_secs", openSecs);
        return cfg;
    }

    /** Sends until the bad worker's circuit leaves CLOSED (round robin reaches it every other request). */
    private static void openCircuit(RouterServer router, Worker badWorker) throws Exception {
        for (int i = 0; i < 6 && badWorker.circuitBreaker().state() == CircuitBreaker.State.CLOSED; i++) {
            TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}");
        }
    }

    @Test
    void anOpenCircuitReceivesNothing() throws Exception {
        MockWorker bad = mock.worker(0);
        bad.knobs().statusCode(500);
        // Open for an hour: the circuit cannot reach half-open while the test looks, however slow the machine.
        try (RouterServer router = Fixture.start(breakerConfig(bad, mock.worker(1), 3600))) {
            Worker badWorker = router.workers().get(bad.url()).orElseThrow();
            openCircuit(router, badWorker);
            assertEquals(CircuitBreaker.State.OPEN, badWorker.circuitBreaker().state());
            long badCount = bad.requestCount();
            for (int i = 0; i < 4; i++) {
                assertEquals(200, TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}").statusCode());
            }
            assertEquals(badCount, bad.requestCount(), "an open circuit receives nothing");
            String metrics = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
            assertTrue(metrics.contains("vllm_router_cb_state_transitions_total{from=\"closed\",to=\"open\""), metrics);
        }
    }

    @Test
    void anOpenCircuitClosesAfterItsTimeoutAndASuccess() throws Exception {
        MockWorker bad = mock.worker(0);
        bad.knobs().statusCode(500);
        try (RouterServer router = Fixture.start(breakerConfig(bad, mock.worker(1), 1))) {
            Worker badWorker = router.workers().get(bad.url()).orElseThrow();
            openCircuit(router, badWorker);
            assertNotEquals(CircuitBreaker.State.CLOSED, badWorker.circuitBreaker().state());
            bad.knobs().statusCode(200);
            assertTrue(eventually(() -> {
                try {
                    TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}");
                } catch (Exception e) {
                    return false;
                }
                return badWorker.circuitBreaker().state() == CircuitBreaker.State.CLOSED;
            }), "circuit closes after the timeout and a success");
        }
    }

    @Test
    void killedWorkerLosesItsSessionsAndNobodyHangs() throws Exception {
        try (MockWorkers own = MockWorkers.start(MockConfig.builder().count(2).build())) {
            Map<String, Object> cfg = Fixture.base(own.urls());
            cfg.put("health_check_interval_secs", 1);
            cfg.put("health_failure_threshold", 1);
            try (RouterServer router = Fixture.start(cfg)) {
                Map<String, String> workerOf = new HashMap<>();
                for (int s = 0; s < 4; s++) {
                    HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"a\"}",
                            "X-Session-ID", "k" + s);
                    workerOf.put("k" + s, r.headers().firstValue("x-worker-id").orElseThrow());
                }
                MockWorker victim = own.worker(0);
                victim.crash();
                assertTrue(eventually(() -> {
                    try {
                        HttpResponse<String> health = TestHttp.get(router.url() + "/health");
                        return health.statusCode() == 503 && health.body().contains(victim.url());
                    } catch (Exception e) {
                        return false;
                    }
                }), "the health checker marks the dead worker");
                for (int s = 0; s < 4; s++) {
                    HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"b\"}",
                            "X-Session-ID", "k" + s);
                    assertEquals(200, r.statusCode(), r.body());
                    assertNotEquals(victim.id(), r.headers().firstValue("x-worker-id").orElseThrow());
                }
                HttpResponse<String> fresh = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"c\"}",
                        "X-Session-ID", "new-one");
                assertNotEquals(victim.id(), fresh.headers().firstValue("x-worker-id").orElseThrow());
                assertEquals(5, router.sessionStats().activeSessions());
                assertTrue(router.sessionStats().rebound() >= 2);
                for (String id : List.of("k0", "k1", "k2", "k3", "new-one")) {
                    router.finishSession(id);
                }
                assertEquals(0, router.sessionStats().activeSessions());
                assertTrue(workerOf.containsValue(victim.id()));
            }
        }
    }

    @Test
    void limiterAnswers429WithRetryAfterAnd408FromTheQueue() throws Exception {
        MockWorker slow = mock.worker(2);
        slow.knobs().hang(true);
        Map<String, Object> cfg = Fixture.base(List.of(slow.url()));
        cfg.put("max_concurrent_requests", 1);
        cfg.put("queue_size", 0);
        // The bucket refills one token a second in real time; frozen, the held token is certainly the only one.
        try (RouterServer router = Fixture.startWithFrozenLimiter(cfg); Socket holder = holdOneRequest(router)) {
            HttpResponse<String> rejected = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}");
            assertEquals(429, rejected.statusCode(), rejected.body());
            assertTrue(Integer.parseInt(rejected.headers().firstValue("retry-after").orElseThrow()) >= 1);
        }
        cfg.put("queue_size", 1);
        cfg.put("queue_timeout_secs", 0);
        try (RouterServer router = Fixture.startWithFrozenLimiter(cfg); Socket holder = holdOneRequest(router)) {
            HttpResponse<String> timedOut = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}");
            assertEquals(408, timedOut.statusCode(), timedOut.body());
        }
    }

    @Test
    void clientDisconnectCancelsTheWorkerRequestAndReleasesLoadOnce() throws Exception {
        MockWorker slow = mock.worker(2);
        slow.knobs().hang(true);
        Map<String, Object> cfg = Fixture.base(List.of(slow.url()));
        try (RouterServer router = Fixture.start(cfg)) {
            Worker worker = router.workers().all().get(0);
            for (int i = 0; i < 3; i++) {
                Socket held = holdOneRequest(router);
                assertTrue(eventually(() -> worker.load() == 1), "request in flight");
                held.close();
                assertTrue(eventually(() -> worker.load() == 0), "load released");
            }
            assertTrue(eventually(() -> slow.inFlight() == 0), "worker saw the cancellation");
            assertEquals(0, worker.load());
            assertEquals(1, router.sessionStats().activeSessions());
            router.finishSession("held");
        }
    }

    @Test
    void requestTimeoutAnswers504AndReleasesTheWorker() throws Exception {
        MockWorker slow = mock.worker(2);
        slow.knobs().hang(true);
        Map<String, Object> cfg = Fixture.base(List.of(slow.url()));
        cfg.put("request_timeout_secs", 1);
        try (RouterServer router = Fixture.start(cfg)) {
            HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}");
            assertEquals(504, r.statusCode(), r.body());
            assertTrue(eventually(() -> router.workers().all().get(0).load() == 0));
        }
    }

    /**
     * The router, not the worker, ends an idle pooled connection: after 4 s idle (uvicorn, vLLM's server, closes at
     * 5 s), so a request rarely meets a connection the worker is closing. The worker here is a bare socket server
     * that keeps every connection open and notes when the router closed the one that carried the completion.
     */
    @Test
    void theRouterClosesAWorkerConnectionIdleForFourSeconds() throws Exception {
        try (ServerSocket worker = new ServerSocket(0, 16, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Long> closedAfterNanos = new CompletableFuture<>();
            Thread acceptor = new Thread(() -> serveKeepingConnections(worker, closedAfterNanos), "idle-test-worker");
            acceptor.setDaemon(true);
            acceptor.start();
            Map<String, Object> cfg = Fixture.base(List.of("http://127.0.0.1:" + worker.getLocalPort()));
            cfg.put("health_check_interval_secs", 3600);
            try (RouterServer router = Fixture.start(cfg)) {
                HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}");
                assertEquals(200, r.statusCode(), r.body());
                long idleMs = closedAfterNanos.get(30, TimeUnit.SECONDS) / 1_000_000;
                assertTrue(idleMs >= 4000 && idleMs < 5000, "closed after " + idleMs + " ms idle");
            }
        }
    }

    /** Answers every request on every connection 200 and never closes; completes with how long the completion's
     * connection sat idle between its answer and the router closing it. */
    private static void serveKeepingConnections(ServerSocket server,
                                                CompletableFuture<Long> closedAfterNanos) {
        while (!server.isClosed()) {
            Socket connection;
            try {
                connection = server.accept();
            } catch (IOException closed) {
                return;
            }
            Thread t = new Thread(() -> {
                try (Socket c = connection) {
                    BufferedReader in = new BufferedReader(
                            new InputStreamReader(c.getInputStream(), StandardCharsets.ISO_8859_1));
                    OutputStream out = c.getOutputStream();
                    boolean completion = false;
                    long answeredAt = 0;
                    String line;
                    while ((line = in.readLine()) != null) {
                        completion |= line.startsWith("POST /v1/completions");
                        int length = 0;
                        while (!line.isEmpty()) {
                            if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                                length = Integer.parseInt(line.substring(15).trim());
                            }
                            line = in.readLine();
                        }
                        in.skip(length);
                        out.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
                                .getBytes(StandardCharsets.ISO_8859_1));
                        out.flush();
                        answeredAt = System.nanoTime();
                    }
                    if (completion) {
                        closedAfterNanos.complete(System.nanoTime() - answeredAt);
                    }
                } catch (IOException | RuntimeException e) {
                    closedAfterNanos.completeExceptionally(e);
                }
            });
            t.setDaemon(true);
            t.start();
        }
    }

    @Test
    void withoutWorkersTheRouterSaysSo() throws Exception {
        try (RouterServer empty = Fixture.start(Fixture.base(List.of()))) {
            HttpResponse<String> inference = TestHttp.post(empty.url() + "/v1/completions", "{\"prompt\":\"x\"}");
            assertEquals(503, inference.statusCode());
            assertEquals("No available workers (all circuits open or unhealthy)", inference.body());
            HttpResponse<String> models = TestHttp.get(empty.url() + "/v1/models");
            assertEquals(503, models.statusCode());
            assertEquals("No workers are available", models.body());
            assertEquals(503, TestHttp.get(empty.url() + "/readiness").statusCode());
            assertEquals("not_ready", TestHttp.json(TestHttp.get(empty.url() + "/readiness")).get("status").asText());
            assertEquals(200, TestHttp.get(empty.url() + "/health").statusCode());
            assertEquals(503, TestHttp.post(empty.url() + "/tokenize", "{}").statusCode());
        }
    }

    @Test
    void startupWaitGivesUpWithUpstreamsMessage() throws Exception {
        Map<String, Object> cfg = Fixture.base(List.of("http://127.0.0.1:1"));
        cfg.put("worker_startup_timeout_secs", 1);
        RouterStartException e = org.junit.jupiter.api.Assertions.assertThrows(RouterStartException.class,
                () -> Fixture.start(cfg));
        assertTrue(e.getMessage().startsWith("Timeout 1s waiting for hosts [\"http://127.0.0.1:1\"] to become healthy."),
                e.getMessage());
    }

    @Test
    void sharedSessionStoreWithoutItsModuleIsAOneLineStartError() throws Exception {
        Map<String, Object> cfg = Fixture.base(List.of());
        cfg.put("session_store", "redis://user:hunter2@127.0.0.1:1/0");
        RouterStartException e = org.junit.jupiter.api.Assertions.assertThrows(RouterStartException.class,
                () -> Fixture.start(cfg));
        assertEquals("Session store redis://***@127.0.0.1:1/0: no implementation of redis:// on the class path "
                + "(it comes with the router-redis module)", e.getMessage());
    }

    /** Sends one request with a session id that the hanging worker never answers; the caller closes the socket. */
    private static Socket holdOneRequest(RouterServer router) throws Exception {
        Socket socket = new Socket("127.0.0.1", router.port());
        String body = "{\"prompt\":\"hold\"}";
        OutputStream out = socket.getOutputStream();
        out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Session-ID: held\r\n"
                + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
        out.flush();
        Worker worker = router.workers().all().get(0);
        assertTrue(eventually(() -> worker.load() == 1), "held request reached the worker");
        return socket;
    }

    /** Polls until the condition holds; the 30 s bound only stops a broken test, it is not a time the test needs. */
    static boolean eventually(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return condition.getAsBoolean();
    }
}
