package org.vllmrouter.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.vllmrouter.server.proxy.Transport;
import org.vllmrouter.server.proxy.WorkerTls;
import org.vllmrouter.core.config.StartEnvironment;

/** Control calls send their request whole and read a worker's whole reply, however it is framed, over a real socket. */
class ControlClientTest {
    private static EventLoopGroup group;
    private static final ControlClient CLIENT = new ControlClient(WorkerTls.trusting(null),
            new DefaultChannelGroup(GlobalEventExecutor.INSTANCE));

    @BeforeAll
    static void start() {
        group = Transport.resolve(StartEnvironment.current().transport()).newGroup(1, "control-client-test");
    }

    @AfterAll
    static void stop() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void anInformationalAnswerIsSkippedForTheFinalReply() throws Exception {
        ControlClient.Reply reply = call("HTTP/1.1 100 Continue\r\n\r\n"
                + "HTTP/1.1 201 Created\r\ncontent-length: 2\r\nx-kind: final\r\n\r\nok");
        assertEquals(201, reply.status());
        assertEquals("final", reply.headers().get("x-kind"));
        assertEquals("ok", new String(reply.body(), StandardCharsets.US_ASCII));
    }

    @Test
    void aChunkedReplyIsReadWhole() throws Exception {
        ControlClient.Reply reply = call("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                + "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n");
        assertEquals("abcdefg", new String(reply.body(), StandardCharsets.US_ASCII));
    }

    @Test
    void aReplyWithoutLengthEndsWhereTheWorkerCloses() throws Exception {
        ControlClient.Reply reply = call("HTTP/1.1 503 Service Unavailable\r\n\r\nuntil close");
        assertEquals(503, reply.status());
        assertEquals("until close", new String(reply.body(), StandardCharsets.US_ASCII));
    }

    @Test
    void aMalformedReplyFailsTheCall() {
        ExecutionException failed = assertThrows(ExecutionException.class, () -> call("NOT HTTP AT ALL\r\n\r\n"));
        assertInstanceOf(IOException.class, failed.getCause());
    }

    @Test
    void aRequestBodyReachesTheWorkerWithItsLength() throws Exception {
        byte[] body = "{\"prompt\": \"caf\u00e9\"}".getBytes(StandardCharsets.UTF_8);
        String seen = received(HttpMethod.POST, body);
        assertTrue(seen.startsWith("POST /probe HTTP/1.1\r\n"), seen);
        assertTrue(seen.contains("\r\ncontent-length: " + body.length + "\r\n"), seen);
        assertTrue(seen.contains("\r\ncontent-type: application/json\r\n"), seen);
        assertTrue(seen.endsWith("\r\n\r\n" + new String(body, StandardCharsets.ISO_8859_1)), seen);
    }

    @Test
    void aRequestWithoutBodySaysSo() throws Exception {
        String seen = received(HttpMethod.GET, null);
        assertTrue(seen.contains("\r\ncontent-length: 0\r\n"), seen);
        assertTrue(seen.endsWith("\r\n\r\n"), seen);
    }

    /** The request a one-shot worker read (head, then as many body bytes as its Content-Length says). */
    private static String received(HttpMethod method, byte[] body) throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            StringBuilder seen = new StringBuilder();
            Thread worker = new Thread(() -> {
                try (Socket c = server.accept()) {
                    InputStream in = c.getInputStream();
                    int length = 0;
                    for (String line = readLine(in); !line.isEmpty(); line = readLine(in)) {
                        seen.append(line).append("\r\n");
                        if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                            length = Integer.parseInt(line.substring("content-length:".length()).trim());
                        }
                    }
                    seen.append("\r\n").append(new String(in.readNBytes(length), StandardCharsets.ISO_8859_1));
                    c.getOutputStream().write("HTTP/1.1 204 No Content\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                } catch (IOException ignored) {
                    // the test's assertion reports what the worker saw
                }
            });
            worker.start();
            try {
                ControlClient.Reply reply = CLIENT.send(group.next(), method,
                        "http://127.0.0.1:" + server.getLocalPort(), "/probe", null, body, Duration.ofSeconds(10))
                        .get(20, TimeUnit.SECONDS);
                assertEquals(204, reply.status());
            } finally {
                worker.join(10_000);
            }
            return seen.toString();
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        for (int b = in.read(); b >= 0 && b != '\n'; b = in.read()) {
            if (b != '\r') {
                line.append((char) b);
            }
        }
        return line.toString();
    }

    /** Sends a GET to a one-shot worker that answers {@code reply} and closes. */
    private static ControlClient.Reply call(String reply) throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread worker = new Thread(() -> {
                try (Socket c = server.accept()) {
                    BufferedReader in = new BufferedReader(
                            new InputStreamReader(c.getInputStream(), StandardCharsets.ISO_8859_1));
                    for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
                        // the request head; a GET has no body
                    }
                    OutputStream out = c.getOutputStream();
                    out.write(reply.getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                } catch (IOException ignored) {
                    // the test's assertion reports what the client saw
                }
            });
            worker.start();
            try {
                return CLIENT.send(group.next(), HttpMethod.GET, "http://127.0.0.1:" + server.getLocalPort(), "/probe",
                        null, null, Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            } finally {
                worker.join(10_000);
            }
        }
    }
}
