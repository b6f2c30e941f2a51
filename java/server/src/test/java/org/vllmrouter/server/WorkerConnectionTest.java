package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What crosses a kept-alive worker connection: answers to HEAD, which carry a length but no body, and the header
 * names of answer after answer, relayed to the client as the worker sent them. The worker is a plain socket server
 * that serves every connection until it closes and notes which connections carried proxied requests.
 */
@ExtendWith(NoLeaks.class)
class WorkerConnectionTest {

    @Test
    void aHeadAnswerEndsAtItsHeadAndTheConnectionServesTheNextRequest() throws Exception {
        try (Worker worker = new Worker((method, n) -> method.equals("HEAD")
                ? "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"
                : "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello");
             RouterServer router = Fixture.start(Fixture.base(List.of(worker.url())));
             Socket client = new Socket("127.0.0.1", router.port())) {
            client.setSoTimeout(30_000);
            OutputStream out = client.getOutputStream();
            InputStream in = client.getInputStream();
            out.write("HEAD /probe HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            String head = readHead(in);
            assertTrue(head.startsWith("HTTP/1.1 200 "), head);
            assertTrue(head.toLowerCase(Locale.ROOT).contains("\r\ncontent-length: 5\r\n"), head);
            // Had the router waited for a body of five bytes, it would have taken them from the next answer.
            for (int i = 0; i < 3; i++) {
                out.write("GET /probe HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                String get = readHead(in);
                assertTrue(get.startsWith("HTTP/1.1 200 "), get);
                assertEquals("hello", new String(in.readNBytes(5), StandardCharsets.ISO_8859_1));
            }
            assertEquals(1, worker.proxiedConnections(), "the HEAD's connection went back to the pool and served on");
        }
    }

    @Test
    void trailersOfAChunkedAnswerReachTheClient() throws Exception {
        try (Worker worker = new Worker((method, n) -> "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n"
                + "trailer: X-Checksum\r\n\r\n5\r\nhello\r\n0\r\nX-Checksum: answer-" + n + "\r\n\r\n");
             RouterServer router = Fixture.start(Fixture.base(List.of(worker.url())));
             Socket client = new Socket("127.0.0.1", router.port())) {
            client.setSoTimeout(30_000);
            for (int n = 1; n <= 2; n++) {
                client.getOutputStream().write(
                        "GET /probe HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                InputStream in = client.getInputStream();
                String head = readHead(in);
                assertTrue(head.toLowerCase(Locale.ROOT).contains("transfer-encoding: chunked"), head);
                String expected = "5\r\nhello\r\n0\r\nX-Checksum: answer-" + n + "\r\n\r\n";
                assertEquals(expected, new String(in.readNBytes(expected.length()), StandardCharsets.ISO_8859_1));
            }
        }
    }

    @Test
    void aChunkedRequestWithTrailersIsForwardedWithItsBody() throws Exception {
        try (Worker worker = new Worker((method, n) -> "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}");
             RouterServer router = Fixture.start(Fixture.base(List.of(worker.url())))) {
            String answer = TestHttp.raw(router.port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                    + "content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                    + "e\r\n{\"prompt\":\"x\"}\r\n0\r\nX-Checksum: request\r\n\r\n");
            assertEquals(200, TestHttp.status(answer), answer);
            assertEquals(List.of("{\"prompt\":\"x\"}"), worker.bodies());
        }
    }

    /** The bytes of one answer's head, up to and including its blank line. */
    private static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (head.length() < 4 || !head.substring(head.length() - 4).equals("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed after " + head);
            }
            head.append((char) b);
        }
        return head.toString();
    }

    @Test
    void everyAnswerCarriesItsOwnHeadersWithTheirCaseAsSent() throws Exception {
        // More distinct names than the codec remembers, so names also replace one another in its cache.
        int names = 40;
        try (Worker worker = new Worker((method, n) -> {
                 StringBuilder answer = new StringBuilder("HTTP/1.1 200 OK\r\nServer: test\r\ncontent-length: 2\r\n");
                 for (int i = 0; i < names; i++) {
                     answer.append(i % 2 == 0 ? "X-Answer-" : "x-answer-").append(i).append(": ")
                             .append(n).append('-').append(i).append("\r\n");
                 }
                 return answer.append("\r\n{}").toString();
             });
             RouterServer router = Fixture.start(Fixture.base(List.of(worker.url())));
             Socket client = new Socket("127.0.0.1", router.port())) {
            // One client connection, so every answer comes over the same worker connection.
            client.setSoTimeout(30_000);
            for (int request = 0; request < 4; request++) {
                client.getOutputStream().write(
                        "GET /probe HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                String answer = readHead(client.getInputStream());
                assertTrue(answer.startsWith("HTTP/1.1 200 "), answer);
                assertEquals("{}", new String(client.getInputStream().readNBytes(2), StandardCharsets.ISO_8859_1));
                assertTrue(answer.contains("\r\nServer: test\r\n"), answer);
                int n = request + 1;
                for (int i = 0; i < names; i++) {
                    String line = (i % 2 == 0 ? "X-Answer-" : "x-answer-") + i + ": " + n + "-" + i;
                    assertTrue(answer.contains("\r\n" + line + "\r\n"), "missing " + line + " in " + answer);
                }
            }
            assertEquals(1, worker.proxiedConnections());
        }
    }

    /**
     * A worker answering {@code answer(method, n)} to the n-th proxied request (from 1), and 200 to health checks.
     */
    private static final class Worker implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        private final BiFunction<String, Integer, String> answer;
        private final AtomicInteger proxied = new AtomicInteger();
        private final Set<Socket> proxiedConnections = ConcurrentHashMap.newKeySet();
        private final List<String> bodies = new CopyOnWriteArrayList<>();

        Worker(BiFunction<String, Integer, String> answer) throws IOException {
            this.answer = answer;
            Thread acceptor = new Thread(this::accept, "worker-connection-test");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getLocalPort();
        }

        int proxiedConnections() {
            return proxiedConnections.size();
        }

        /** The bodies of the proxied requests that had one, in order. */
        List<String> bodies() {
            return bodies;
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket connection = server.accept();
                    Thread t = new Thread(() -> serve(connection), "worker-connection-test-conn");
                    t.setDaemon(true);
                    t.start();
                } catch (IOException closed) {
                    return;
                }
            }
        }

        private void serve(Socket connection) {
            try (Socket c = connection) {
                BufferedReader in = new BufferedReader(
                        new InputStreamReader(c.getInputStream(), StandardCharsets.ISO_8859_1));
                OutputStream out = c.getOutputStream();
                String line;
                while ((line = in.readLine()) != null) {
                    String method = line.substring(0, line.indexOf(' '));
                    boolean health = line.contains(" /health ");
                    int length = 0;
                    while (!line.isEmpty()) {
                        if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                            length = Integer.parseInt(line.substring(15).trim());
                        }
                        line = in.readLine();
                    }
                    char[] body = new char[length];
                    for (int read = 0, n; read < length; read += n) {
                        n = in.read(body, read, length - read);
                        if (n < 0) {
                            return;
                        }
                    }
                    String reply;
                    if (health) {
                        reply = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                    } else {
                        proxiedConnections.add(c);
                        if (length > 0) {
                            bodies.add(new String(body));
                        }
                        reply = answer.apply(method, proxied.incrementAndGet());
                    }
                    out.write(reply.getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                }
            } catch (IOException | RuntimeException closed) {
                // The router closed the connection.
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
