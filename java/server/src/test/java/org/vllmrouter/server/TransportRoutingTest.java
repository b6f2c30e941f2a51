package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;
import org.vllmrouter.server.proxy.Transport;
import org.vllmrouter.core.config.StartEnvironment;

/** A router on each socket transport this machine can run, over real sockets (the rest of the suite runs on the default one). */
@ExtendWith(NoLeaks.class)
class TransportRoutingTest {
    /** Held so that the handler added to it stays on the logger the router writes to. */
    private static final Logger ROUTER_LOG = Logger.getLogger(RouterServer.class.getName());
    static MockWorkers mock;

    @BeforeAll
    static void start() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(2).build());
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    static Stream<Transport> runnable() {
        return Arrays.stream(Transport.values()).filter(t -> t.unavailability().isEmpty());
    }

    @ParameterizedTest
    @MethodSource("runnable")
    void aRouterOnEachTransportRoutesStreamsAndRefuses(Transport transport) throws Exception {
        Map<String, Object> cfg = Fixture.base(mock.urls());
        List<String> logged = Collections.synchronizedList(new ArrayList<>());
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                logged.add(record.getMessage());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        Level level = ROUTER_LOG.getLevel();
        ROUTER_LOG.setLevel(Level.INFO);
        ROUTER_LOG.addHandler(capture);
        RouterServer started;
        try {
            started = RouterServer.start(Fixture.settings(cfg), RouterServer.Options.DEFAULTS.withTransport(transport));
        } finally {
            ROUTER_LOG.removeHandler(capture);
            ROUTER_LOG.setLevel(level);
        }
        try (RouterServer router = started) {
            // Which transport runs is in the start-up log, since auto's choice depends on the kernel.
            int loops = EventLoopCount.resolve(StartEnvironment.current().eventLoops(),
                    Runtime.getRuntime().availableProcessors());
            assertTrue(logged.contains("Event loops: " + loops + " on " + transport.label()), logged.toString());
            String base = router.url();
            assertEquals(200, TestHttp.get(base + "/health").statusCode());

            // Turns of one session stay on one worker, over pooled worker connections.
            long before = Arrays.stream(mock.workers().toArray(MockWorker[]::new)).mapToLong(MockWorker::requestCount).sum();
            for (int turn = 0; turn < 5; turn++) {
                HttpResponse<String> answer = TestHttp.post(base + "/v1/chat/completions", TestHttp.chat("m", "turn " + turn),
                        "Content-Type", "application/json", "X-Session-ID", "transport-" + transport.label());
                assertEquals(200, answer.statusCode(), answer.body());
                assertEquals("chat.completion", TestHttp.json(answer).get("object").asText());
            }
            List<Long> served = mock.workers().stream().map(MockWorker::requestCount).toList();
            assertEquals(before + 5, served.stream().mapToLong(Long::longValue).sum());
            JsonNode sessions = TestHttp.json(TestHttp.get(base + "/sessions"));
            assertEquals(1, sessions.get("active_sessions").asInt(), sessions.toString());

            // A streamed answer arrives whole, as server-sent events ending in [DONE].
            HttpResponse<String> stream = TestHttp.post(base + "/v1/chat/completions",
                    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"s\"}],\"max_tokens\":4,\"stream\":true}",
                    "Content-Type", "application/json");
            assertEquals(200, stream.statusCode());
            assertTrue(stream.body().startsWith("data: ") && stream.body().strip().endsWith("data: [DONE]"), stream.body());

            // Bad input is a 400 the client reads, and the router goes on serving.
            HttpResponse<String> bad = TestHttp.post(base + "/v1/completions", "{\"prompt\":", "Content-Type", "application/json");
            assertEquals(400, bad.statusCode());
            assertEquals(200, TestHttp.post(base + "/finish_session?session_id=transport-" + transport.label(), "")
                    .statusCode());
            assertEquals(0, router.sessionStats().activeSessions());
        }
    }

    /**
     * Closing a router with idle keep-alive connections on both sides (a client's, and the pooled worker ones) leaks
     * no buffer: on io_uring each idle connection has a receive pending with a buffer of its own, which only the
     * completion of its cancellation gives back.
     */
    @ParameterizedTest
    @MethodSource("runnable")
    void aRouterClosedWithIdleConnectionsOnBothSidesLeaksNothing(Transport transport) throws Exception {
        List<Socket> clients = new ArrayList<>();
        try {
            for (int round = 0; round < 10; round++) {
                RouterServer router = RouterServer.start(Fixture.settings(Fixture.base(mock.urls())),
                        RouterServer.Options.DEFAULTS.withTransport(transport));
                try {
                    for (int c = 0; c < 4; c++) {
                        Socket client = new Socket("127.0.0.1", router.port());
                        clients.add(client);
                        String body = TestHttp.chat("m", "idle " + c);
                        client.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                                .getBytes(StandardCharsets.UTF_8));
                        BufferedReader reader = new BufferedReader(new InputStreamReader(client.getInputStream(),
                                StandardCharsets.UTF_8));
                        assertEquals("HTTP/1.1 200 OK", reader.readLine());
                    }
                } finally {
                    router.close();
                }
            }
        } finally {
            for (Socket client : clients) {
                client.close();
            }
        }
    }
}
