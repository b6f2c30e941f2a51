package org.vllmrouter.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.vllmrouter.server.proxy.Transport;
import org.vllmrouter.server.proxy.WorkerTls;

/** Control calls read a worker's whole reply, however it is framed, over a real socket. */
class ControlClientTest {
    private static EventLoopGroup group;
    private static final ControlClient CLIENT = new ControlClient(WorkerTls.fromEnvironment(),
            new DefaultChannelGroup(GlobalEventExecutor.INSTANCE));

    @BeforeAll
    static void start() {
        group = Transport.fromEnvironment().newGroup(1, "control-client-test");
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
