package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/**
 * The faults users meet in production, each against a router of its own over real sockets, each ending in the same
 * verdict ({@link #verdict}): the router is healthy and serves a new session, every worker's load is back to 0, the
 * session counts add up to the live sessions, and nothing a client read carries a stack trace. Buffer leaks are
 * checked at PARANOID for the whole class ({@link NoLeaks}).
 */
@ExtendWith(NoLeaks.class)
class FaultSuiteTest {
    /** Health flips every second for this long, as long as the outages users reported. */
    private static final int FLAP_SECONDS = 30;
    private static final String STREAM = "{\"prompt\":\"tell me a story\",\"max_tokens\":40,\"stream\":true}";
    private static final String PROMPT = "{\"prompt\":\"x\",\"max_tokens\":1}";

    /** Held so that its level stays set: the policy logs every new session at INFO, as upstream does. */
    private static final java.util.logging.Logger SESSION_LOG =
            java.util.logging.Logger.getLogger(org.vllmrouter.core.policy.StickyLeastLoadedPolicy.class.getName());

    /** Everything a client read in the current case, checked for stack traces by the verdict. */
    private final List<String> clientSaw = Collections.synchronizedList(new ArrayList<>());

    @Test
    void workerSigkilledMidStream() throws Exception {
        try (MockProcess doomed = MockProcess.start("--count", "1", "--slow-stream-ms", "50", "--stream-chunks", "40");
             MockWorkers survivor = MockWorkers.start(MockConfig.builder().count(1).build())) {
            Map<String, Object> cfg = Fixture.base(List.of(doomed.url(), survivor.urls().get(0)));
            cfg.put("health_check_interval_secs", 1);
            cfg.put("health_failure_threshold", 1);
            try (RouterServer router = Fixture.start(cfg)) {
                Worker doomedWorker = router.workers().get(doomed.url()).orElseThrow();
                ExecutorService clients = Executors.newFixedThreadPool(8);
                Map<String, AtomicInteger> streaming = Map.of(doomed.workerId(), new AtomicInteger(),
                        survivor.worker(0).id(), new AtomicInteger());
                List<Future<String>> outcomes = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    String session = "kill-" + i;
                    outcomes.add(clients.submit(() -> stream(router, session, streaming)));
                }
                assertTrue(ResilienceTest.eventually(() -> streaming.get(doomed.workerId()).get() >= 2),
                        "streams under way on the doomed worker");
                doomed.kill();
                int complete = 0;
                int cleanErrors = 0;
                for (Future<String> f : outcomes) {
                    String outcome = f.get(60, TimeUnit.SECONDS);
                    if (outcome.startsWith("complete")) {
                        complete++;
                    } else {
                        assertTrue(outcome.startsWith("error:"), outcome);
                        cleanErrors++;
                    }
                }
                clients.shutdown();
                assertTrue(cleanErrors >= 1, "a stream cut by the kill ended in a clean error: " + cleanErrors);
                assertEquals(8, complete + cleanErrors);
                assertTrue(ResilienceTest.eventually(() -> !doomedWorker.isHealthy()), "health check saw the kill");
                for (int i = 0; i < 8; i++) {
                    HttpResponse<String> again = post(router, PROMPT, "kill-" + i);
                    assertEquals(200, again.statusCode(), again.body());
                    assertEquals(survivor.worker(0).id(), again.headers().firstValue("x-worker-id").orElseThrow());
                }
                verdict(router, 9);
                finish(router, "kill-", 8);
            }
        }
    }

    @Test
    void workerThatAcceptsAndNeverAnswersGets504AndLeaksNothing() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).all(k -> k.hang(true)).build())) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("request_timeout_secs", 1);
            try (RouterServer router = Fixture.start(cfg)) {
                ExecutorService clients = Executors.newFixedThreadPool(10);
                List<Future<HttpResponse<String>>> answers = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    String session = "hang-" + i;
                    answers.add(clients.submit(() -> post(router, PROMPT, session)));
                }
                for (Future<HttpResponse<String>> a : answers) {
                    assertEquals(504, a.get(60, TimeUnit.SECONDS).statusCode());
                }
                clients.shutdown();
                assertTrue(ResilienceTest.eventually(() -> mock.worker(0).inFlight() == 0),
                        "the router hung up on the worker: nothing waits there");
                mock.worker(0).knobs().hang(false);
                verdict(router, 11);
                finish(router, "hang-", 10);
            }
        }
    }

    @Test
    void healthFlappingEverySecond() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("health_check_interval_secs", 1);
            cfg.put("health_failure_threshold", 1);
            cfg.put("health_success_threshold", 1);
            try (RouterServer router = Fixture.start(cfg)) {
                MockWorker flapping = mock.worker(0);
                AtomicBoolean flapsOver = new AtomicBoolean();
                AtomicInteger served = new AtomicInteger();
                List<String> failures = Collections.synchronizedList(new ArrayList<>());
                ExecutorService clients = Executors.newFixedThreadPool(4);
                List<Future<?>> loops = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    int thread = t;
                    loops.add(clients.submit(() -> {
                        for (int n = 0; !flapsOver.get(); n++) {
                            String session = "flap-" + (thread * 3 + n % 3);
                            HttpResponse<String> r = post(router, PROMPT, session);
                            if (r.statusCode() == 200) {
                                served.incrementAndGet();
                            } else {
                                failures.add(session + " -> " + r.statusCode() + " " + r.body());
                            }
                        }
                        return null;
                    }));
                }
                long rebinds = router.sessionStats().rebound();
                for (int s = 0; s < FLAP_SECONDS; s++) {
                    flapping.knobs().healthy(s % 2 == 1);
                    Thread.sleep(1000);
                }
                flapping.knobs().healthy(true);
                flapsOver.set(true);
                for (Future<?> loop : loops) {
                    loop.get(60, TimeUnit.SECONDS);
                }
                clients.shutdown();
                assertEquals(List.of(), failures, "both workers answer inference throughout: no request failed");
                assertTrue(served.get() > 0);
                assertTrue(router.sessionStats().rebound() > rebinds,
                        "the flapping was seen: sessions moved off the worker while it was unhealthy");
                assertTrue(ResilienceTest.eventually(() -> router.workers().all().stream().allMatch(Worker::isHealthy)));
                verdict(router, 13);
                finish(router, "flap-", 12);
            }
        }
    }

    @Test
    void slowLorisHeadersAndBodiesAreCutOffAndOthersServed() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
            try (RouterServer router = Fixture.startWithClientReadTimeout(Fixture.base(mock.urls()),
                    Duration.ofSeconds(2))) {
                ExecutorService loris = Executors.newFixedThreadPool(40);
                List<Future<Boolean>> cutOff = new ArrayList<>();
                for (int i = 0; i < 40; i++) {
                    boolean inBody = i % 2 == 1;
                    cutOff.add(loris.submit(() -> trickle(router.port(), inBody)));
                }
                for (int i = 0; i < 50; i++) {
                    HttpResponse<String> r = post(router, PROMPT, null);
                    assertEquals(200, r.statusCode(), "a well-behaved client is served while 40 trickle");
                }
                for (Future<Boolean> f : cutOff) {
                    assertTrue(f.get(60, TimeUnit.SECONDS), "the router closed a trickling connection");
                }
                loris.shutdown();
                verdict(router, 1);
            }
        }
    }

    /**
     * The read deadline runs per request, not per connection: a keep-alive connection may sit idle between requests
     * for longer than the deadline, and a later request that trickles gets its own full deadline, counted from its
     * own first byte, before it is cut off.
     */
    @Test
    void theReadDeadlineCountsFromEachRequestsFirstByteOnAKeepAliveConnection() throws Exception {
        long timeoutMs = 2000;
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).build())) {
            try (RouterServer router = Fixture.startWithClientReadTimeout(Fixture.base(mock.urls()),
                    Duration.ofMillis(timeoutMs))) {
                try (Socket socket = new Socket("127.0.0.1", router.port())) {
                    socket.setSoTimeout(30_000);
                    OutputStream out = socket.getOutputStream();
                    InputStream in = socket.getInputStream();
                    String request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            + "Content-Length: " + PROMPT.length() + "\r\n\r\n" + PROMPT;
                    out.write(request.getBytes(StandardCharsets.US_ASCII));
                    assertTrue(readResponse(in).startsWith("HTTP/1.1 200 "));
                    sleep(timeoutMs + 500);
                    out.write(request.getBytes(StandardCharsets.US_ASCII));
                    assertTrue(readResponse(in).startsWith("HTTP/1.1 200 "), "served after an idle spell");

                    // The connection's timer was armed by an earlier request; this one still gets its whole deadline.
                    sleep(timeoutMs / 2);
                    long started = System.nanoTime();
                    String head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
                    out.write(head.getBytes(StandardCharsets.US_ASCII));
                    long openMs = -1;
                    socket.setSoTimeout(50);
                    while (openMs < 0 && System.nanoTime() - started < TimeUnit.SECONDS.toNanos(30)) {
                        try {
                            out.write('{');
                            out.flush();
                            if (in.read() < 0) {
                                openMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
                            }
                        } catch (java.net.SocketTimeoutException nothingYet) {
                            sleep(100);
                        } catch (SocketException closed) {
                            openMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
                        }
                    }
                    assertTrue(openMs >= 0, "the trickling request was cut off");
                    assertTrue(openMs >= timeoutMs - 100, "cut off after " + openMs + " ms, before its own deadline");
                }
                verdict(router, 1);
            }
        }
    }

    @Test
    void aThousandClientsDisconnectMidStream() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(4)
                .all(k -> k.slowStreamMs(20).streamChunks(100)).build())) {
            try (RouterServer router = Fixture.start(Fixture.base(mock.urls()))) {
                ExecutorService clients = Executors.newFixedThreadPool(100);
                List<Future<Boolean>> left = new ArrayList<>();
                for (int i = 0; i < 1000; i++) {
                    String session = "gone-" + i;
                    left.add(clients.submit(() -> readFirstChunkThenHangUp(router.port(), session)));
                }
                for (Future<Boolean> f : left) {
                    assertTrue(f.get(120, TimeUnit.SECONDS), "the stream had started when the client left");
                }
                clients.shutdown();
                assertTrue(ResilienceTest.eventually(() -> mock.workers().stream().allMatch(w -> w.inFlight() == 0)),
                        "every worker stream was cancelled");
                verdict(router, 1001);
                finish(router, "gone-", 1000);
            }
        }
    }

    /**
     * Ten times as many distinct ids as the table may hold, all answered, the table held at its bound. (The issue's
     * million ids against 100,000 run against the table itself in InMemorySessionTableTest and through a router in
     * {@code examples/bench/soak.py --million-ids}: over sockets at PARANOID leak detection they would take minutes
     * here.)
     */
    @Test
    void distinctSessionIdsBeyondMaxSessionsAreEvictedNotKept() throws Exception {
        int maxSessions = 1_000;
        int distinct = 10_000;
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("max_sessions", maxSessions);
            java.util.logging.Level level = SESSION_LOG.getLevel();
            SESSION_LOG.setLevel(java.util.logging.Level.WARNING);
            try (RouterServer router = Fixture.start(cfg)) {
                int connections = 16;
                ExecutorService clients = Executors.newFixedThreadPool(connections);
                List<Future<Integer>> ok = new ArrayList<>();
                for (int c = 0; c < connections; c++) {
                    int first = c * (distinct / connections);
                    ok.add(clients.submit(() -> pipelineSessions(router.port(), first, distinct / connections)));
                }
                int served = 0;
                for (Future<Integer> f : ok) {
                    served += f.get(300, TimeUnit.SECONDS);
                }
                clients.shutdown();
                assertEquals(distinct, served, "every request answered 200: eviction is never an error");
                SessionStats s = router.sessionStats();
                assertEquals(maxSessions, s.activeSessions());
                assertEquals(distinct - maxSessions, s.evicted());
                String metrics = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
                assertTrue(metrics.contains("vllm_router_sticky_sessions_evicted_total " + (distinct - maxSessions)),
                        metrics);
                verdict(router, maxSessions);
            } finally {
                SESSION_LOG.setLevel(level);
            }
        }
    }

    @Test
    void aBodyJustOverTheLimitGetsA413TheClientReads() throws Exception {
        int limit = 1024 * 1024;
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).build())) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("max_payload_size", limit);
            try (RouterServer router = Fixture.start(cfg)) {
                byte[] body = new byte[limit + 13];
                java.util.Arrays.fill(body, (byte) 'x');
                for (String framing : List.of("Content-Length: " + body.length + "\r\nConnection: close",
                        "Content-Length: " + body.length, "Transfer-Encoding: chunked")) {
                    String answer = sendWholeBody(router.port(), framing, body);
                    clientSaw.add(answer);
                    assertTrue(answer.startsWith("HTTP/1.1 413 "), framing + " -> " + answer);
                    assertTrue(answer.contains("max_payload_size"), answer);
                }
                verdict(router, 1);
            }
        }
    }

    /**
     * The verdict every case ends with: the router is healthy and routes a new session to a healthy worker, every
     * worker's load returns to 0, the session counts add up (to {@code activeSessions} once the check's own session
     * is in), and no client read a stack trace.
     */
    private void verdict(RouterServer router, long activeSessions) throws Exception {
        assertEquals(200, TestHttp.get(router.url() + "/liveness").statusCode());
        HttpResponse<String> fresh = post(router, PROMPT, "verdict");
        assertEquals(200, fresh.statusCode(), fresh.body());
        assertTrue(ResilienceTest.eventually(() -> router.workers().all().stream().allMatch(w -> w.load() == 0)),
                "every worker's load back to 0: " + router.workers().all().stream().map(Worker::load).toList());
        SessionStats s = router.sessionStats();
        assertEquals(activeSessions, s.activeSessions(), s.toString());
        assertEquals(s.activeSessions(), s.activeByWorker().values().stream().mapToInt(Integer::intValue).sum(),
                "counts add up to the live sessions: " + s);
        assertTrue(s.activeByWorker().values().stream().allMatch(n -> n > 0), s.toString());
        assertEquals(s.started() - s.released() - s.expired() - s.evicted(), s.activeSessions(), s.toString());
        JsonNode sessions = TestHttp.json(TestHttp.get(router.url() + "/sessions"));
        assertEquals(s.activeSessions(), sessions.get("active_sessions").asLong());
        router.finishSession("verdict");
        synchronized (clientSaw) {
            for (String seen : clientSaw) {
                assertFalse(seen.contains("Exception") || seen.contains("\tat ") || seen.contains("at org.vllmrouter"),
                        "a client read a stack trace: " + seen);
            }
            clientSaw.clear();
        }
    }

    private HttpResponse<String> post(RouterServer router, String body, String session) throws Exception {
        HttpResponse<String> r = session == null ? TestHttp.post(router.url() + "/v1/completions", body)
                : TestHttp.post(router.url() + "/v1/completions", body, "X-Session-ID", session);
        clientSaw.add(r.body());
        return r;
    }

    private static void finish(RouterServer router, String prefix, int n) {
        for (int i = 0; i < n; i++) {
            router.finishSession(prefix + i);
        }
        assertEquals(0, router.sessionStats().activeSessions());
    }

    /**
     * One streamed completion: "complete" when it ended with [DONE], else "error: ..." (a clean one: no hang). Counts
     * the stream under its worker's id once its first event arrived.
     */
    private String stream(RouterServer router, String session, Map<String, AtomicInteger> streaming) {
        StringBuilder got = new StringBuilder();
        try (Socket socket = new Socket("127.0.0.1", router.port())) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "X-Session-ID: " + session + "\r\nContent-Length: " + STREAM.length() + "\r\n\r\n" + STREAM)
                    .getBytes(StandardCharsets.US_ASCII));
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String worker = null;
            boolean counted = false;
            for (String line; (line = in.readLine()) != null; ) {
                got.append(line).append('\n');
                if (line.regionMatches(true, 0, "x-worker-id:", 0, 12)) {
                    worker = line.substring(12).trim();
                }
                if (line.startsWith("data: ") && !counted && worker != null) {
                    streaming.get(worker).incrementAndGet();
                    counted = true;
                }
                if (line.equals("data: [DONE]")) {
                    return "complete";
                }
            }
            return "error: connection closed";
        } catch (IOException e) {
            return "error: " + e.getMessage();
        } finally {
            clientSaw.add(got.toString());
        }
    }

    /**
     * A client that sends a request a byte every 200 ms (its headers, or with {@code inBody} its body after whole
     * headers) until the router closes the connection; true when the router did, within a bound.
     */
    private static boolean trickle(int port, boolean inBody) throws IOException {
        String head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 1000\r\n\r\n";
        try (Socket socket = new Socket("127.0.0.1", port)) {
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            socket.setSoTimeout(1);
            if (inBody) {
                out.write(head.getBytes(StandardCharsets.US_ASCII));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            for (int i = 0; System.nanoTime() < deadline; i++) {
                try {
                    out.write(inBody ? '{' : head.charAt(i % (head.length() - 4)));
                    out.flush();
                } catch (SocketException closed) {
                    return true;
                }
                try {
                    if (in.read() < 0) {
                        return true;
                    }
                } catch (java.net.SocketTimeoutException nothingYet) {
                    // Still open: keep trickling.
                } catch (SocketException reset) {
                    return true;
                }
                sleep(200);
            }
            return false;
        }
    }

    /** Starts a slow stream with a session, reads its first event, then hangs up; true when the stream had begun. */
    private static boolean readFirstChunkThenHangUp(int port, String session) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(60_000);
            socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "X-Session-ID: " + session + "\r\nContent-Length: " + STREAM.length() + "\r\n\r\n" + STREAM)
                    .getBytes(StandardCharsets.US_ASCII));
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                if (line.startsWith("data: ")) {
                    socket.setSoLinger(true, 0);
                    return true;
                }
            }
            return false;
        }
    }

    /** Sends {@code count} requests with distinct session ids, pipelined on one connection; how many got a 200. */
    private static int pipelineSessions(int port, int firstId, int count) throws IOException {
        int window = 64;
        int ok = 0;
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(60_000);
            OutputStream out = socket.getOutputStream();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.ISO_8859_1));
            int sent = 0;
            int answered = 0;
            while (answered < count) {
                StringBuilder batch = new StringBuilder();
                while (sent < count && sent - answered < window) {
                    batch.append("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
                            .append("X-Session-ID: distinct-").append(firstId + sent).append("\r\nContent-Length: ")
                            .append(PROMPT.length()).append("\r\n\r\n").append(PROMPT);
                    sent++;
                }
                if (!batch.isEmpty()) {
                    out.write(batch.toString().getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                }
                int target = Math.min(count, answered + window / 2);
                while (answered < target) {
                    if (readResponse(in) == 200) {
                        ok++;
                    }
                    answered++;
                }
            }
        }
        return ok;
    }

    /** Reads one response with a Content-Length body; its status. */
    private static int readResponse(BufferedReader in) throws IOException {
        String status = in.readLine();
        int length = 0;
        for (String line; (line = in.readLine()) != null && !line.isEmpty(); ) {
            if (line.regionMatches(true, 0, "content-length:", 0, 15)) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        if (in.skip(length) != length) {
            throw new IOException("short body");
        }
        return Integer.parseInt(status.substring(9, 12));
    }

    /** Sends the whole body with {@code framing}, then reads what the router answered until it closes. */
    /** Reads one response with a Content-Length body from a keep-alive connection; returns its head and body. */
    private static String readResponse(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed in the response head: " + head);
            }
            head.write(b);
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        int length = 0;
        for (String line : text.split("\r\n")) {
            if (line.regionMatches(true, 0, "content-length:", 0, 15)) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        return text + new String(in.readNBytes(length), StandardCharsets.ISO_8859_1);
    }

    private static String sendWholeBody(int port, String framing, byte[] body) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            boolean chunked = framing.contains("chunked");
            for (int off = 0; off < body.length; off += 16 * 1024) {
                int n = Math.min(16 * 1024, body.length - off);
                if (chunked) {
                    out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII));
                }
                out.write(body, off, n);
                if (chunked) {
                    out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
                }
            }
            if (chunked) {
                out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            }
            out.flush();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            socket.getInputStream().transferTo(got);
            return got.toString(StandardCharsets.ISO_8859_1);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A mock worker in a process of its own, so that it can be SIGKILLed as a crashed vLLM would be. */
    private static final class MockProcess implements AutoCloseable {
        private final Process process;
        private final String url;
        private final String workerId;

        private MockProcess(Process process, String url, String workerId) {
            this.process = process;
            this.url = url;
            this.workerId = workerId;
        }

        static MockProcess start(String... args) throws IOException {
            List<String> command = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                    "-cp", System.getProperty("java.class.path"), "org.vllmrouter.mock.MockWorkerMain", "--lifeline"));
            command.addAll(List.of(args));
            Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            String ready = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))
                    .readLine();
            JsonNode line = TestHttp.JSON.readTree(ready);
            if (!"ready".equals(line.path("event").asText())) {
                process.destroyForcibly();
                throw new IOException("mock worker process did not start: " + ready);
            }
            return new MockProcess(process, line.get("urls").get(0).asText(), line.get("worker_ids").get(0).asText());
        }

        String url() {
            return url;
        }

        String workerId() {
            return workerId;
        }

        /** SIGKILL: the kernel closes its sockets, nothing of it says goodbye. */
        void kill() {
            process.destroyForcibly();
            try {
                process.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void close() {
            kill();
        }
    }
}
