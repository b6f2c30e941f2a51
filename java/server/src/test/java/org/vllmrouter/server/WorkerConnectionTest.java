package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vllmrouter.server.PlainSocketWorker.answering;
import static org.vllmrouter.server.PlainSocketWorker.readHead;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What crosses a kept-alive worker connection: answers to HEAD, which carry a length but no body, and the header
 * names of answer after answer, relayed to the client as the worker sent them, from a {@link PlainSocketWorker}.
 */
@ExtendWith(NoLeaks.class)
class WorkerConnectionTest {

    @Test
    void aHeadAnswerEndsAtItsHeadAndTheConnectionServesTheNextRequest() throws Exception {
        try (PlainSocketWorker worker = answering((method, n) -> method.equals("HEAD")
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
        try (PlainSocketWorker worker = answering((method, n) -> "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n"
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
        try (PlainSocketWorker worker = answering((method, n) -> "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}");
             RouterServer router = Fixture.start(Fixture.base(List.of(worker.url())))) {
            String answer = TestHttp.raw(router.port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                    + "content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                    + "e\r\n{\"prompt\":\"x\"}\r\n0\r\nX-Checksum: request\r\n\r\n");
            assertEquals(200, TestHttp.status(answer), answer);
            assertEquals(List.of("{\"prompt\":\"x\"}"), worker.bodies());
        }
    }

    @Test
    void everyAnswerCarriesItsOwnHeadersWithTheirCaseAsSent() throws Exception {
        // More distinct names than the codec remembers, so names also replace one another in its cache.
        int names = 40;
        try (PlainSocketWorker worker = answering((method, n) -> {
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
}
