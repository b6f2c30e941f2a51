package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A client that stops reading a long answer stops the router reading it from the worker: what the router holds for
 * that client is bounded, whatever the worker still has to send. The worker is a plain socket server whose answer
 * (1 GiB, as fast as its socket takes it) counts the bytes it got out.
 */
@ExtendWith(NoLeaks.class)
class RelayBackpressureTest {
    private static final long ANSWER_BYTES = 1L << 30;
    private static final long MIB = 1L << 20;

    @Test
    void aClientThatStopsReadingStopsTheRelayFromTheWorker() throws Exception {
        try (StreamingWorker worker = new StreamingWorker();
             RouterServer router = Fixture.start(Fixture.base(List.of(worker.url())));
             Socket client = new Socket()) {
            client.setReceiveBufferSize(64 * 1024);
            client.connect(new java.net.InetSocketAddress("127.0.0.1", router.port()));
            client.setSoTimeout(30_000);
            String body = "{\"prompt\":\"long\",\"stream\":true}";
            client.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.ISO_8859_1));
            String head = readHead(client.getInputStream());
            assertTrue(head.startsWith("HTTP/1.1 200 "), head);

            // The client reads nothing more. Once the buffers on the way are full the worker can send no more.
            long sent = worker.sentWhenSettled();
            // 4.5 MiB measured here, most of it in the kernel's socket buffers, which it sizes by itself.
            assertTrue(sent < 64 * MIB, "the worker got " + sent / MIB + " MiB out to a client that stopped reading");

            // The relay goes on when the client reads again: 16 MiB more than the worker had sent arrive.
            InputStream in = client.getInputStream();
            byte[] buffer = new byte[1 << 16];
            long read = 0;
            while (read < sent + 16 * MIB) {
                int n = in.read(buffer);
                assertTrue(n > 0, "the answer ended after " + read + " bytes");
                read += n;
            }
        }
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            assertTrue(b >= 0, "closed before the head ended: " + head);
            head.write(b);
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    /** Answers /health, and anything else with a 1 GiB event stream written as fast as the connection takes it. */
    private static final class StreamingWorker implements AutoCloseable {
        final ServerSocket server;
        final AtomicLong sent = new AtomicLong();
        private final Thread acceptor;

        StreamingWorker() throws IOException {
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            acceptor = new Thread(this::acceptAll, "streaming-worker");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getLocalPort();
        }

        private void acceptAll() {
            while (!server.isClosed()) {
                try {
                    Socket connection = server.accept();
                    connection.setSendBufferSize(64 * 1024);
                    Thread serve = new Thread(() -> serve(connection), "streaming-worker-connection");
                    serve.setDaemon(true);
                    serve.start();
                } catch (IOException closed) {
                    return;
                }
            }
        }

        private void serve(Socket connection) {
            try (connection) {
                InputStream in = connection.getInputStream();
                OutputStream out = connection.getOutputStream();
                while (true) {
                    String head = readHead(in);
                    int length = 0;
                    for (String line : head.split("\r\n")) {
                        if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                            length = Integer.parseInt(line.substring("content-length:".length()).strip());
                        }
                    }
                    in.readNBytes(length);
                    if (head.startsWith("GET /health")) {
                        out.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".getBytes(StandardCharsets.ISO_8859_1));
                        continue;
                    }
                    out.write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: " + ANSWER_BYTES
                            + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                    byte[] events = "data: {\"choices\":[{\"text\":\" token\"}]}\n\n".repeat(1024)
                            .getBytes(StandardCharsets.ISO_8859_1);
                    for (long left = ANSWER_BYTES; left > 0; ) {
                        int n = (int) Math.min(left, events.length);
                        out.write(events, 0, n);
                        left -= n;
                        sent.addAndGet(n);
                    }
                }
            } catch (IOException | AssertionError gone) {
                // The router closed the connection (the client went away, or the router stopped).
            }
        }

        /** The bytes sent once a second has passed with no more sent. */
        long sentWhenSettled() throws InterruptedException {
            long last = -1;
            for (int i = 0; i < 30 && sent.get() != last; i++) {
                last = sent.get();
                Thread.sleep(1_000);
            }
            assertEquals(last, sent.get(), "the worker was still sending after 30 s");
            return last;
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
