package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vllmrouter.server.PlainSocketWorker.readHead;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A client that stops reading a long answer stops the router reading it from the worker: what the router holds for
 * that client is bounded, whatever the worker still has to send. The worker's answer (1 GiB, as fast as its socket
 * takes it) counts the bytes it got out.
 */
@ExtendWith(NoLeaks.class)
class RelayBackpressureTest {
    private static final long ANSWER_BYTES = 1L << 30;
    private static final long MIB = 1L << 20;

    @Test
    void aClientThatStopsReadingStopsTheRelayFromTheWorker() throws Exception {
        AtomicLong sent = new AtomicLong();
        try (PlainSocketWorker worker = new PlainSocketWorker((method, n, out) -> {
                 out.write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: " + ANSWER_BYTES
                         + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                 byte[] events = "data: {\"choices\":[{\"text\":\" token\"}]}\n\n".repeat(1024)
                         .getBytes(StandardCharsets.ISO_8859_1);
                 for (long left = ANSWER_BYTES; left > 0; ) {
                     int length = (int) Math.min(left, events.length);
                     out.write(events, 0, length);
                     left -= length;
                     sent.addAndGet(length);
                 }
             });
             RouterServer router = Fixture.start(Fixture.base(List.of(worker.url())));
             Socket client = new Socket()) {
            client.setReceiveBufferSize(64 * 1024);
            client.connect(new InetSocketAddress("127.0.0.1", router.port()));
            client.setSoTimeout(30_000);
            String body = "{\"prompt\":\"long\",\"stream\":true}";
            client.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.ISO_8859_1));
            String head = readHead(client.getInputStream());
            assertTrue(head.startsWith("HTTP/1.1 200 "), head);

            // The client reads nothing more. Once the buffers on the way are full the worker can send no more.
            long settled = whenSettled(sent);
            // 4.5 MiB measured here, most of it in the kernel's socket buffers, which it sizes by itself.
            assertTrue(settled < 64 * MIB, "the worker got " + settled / MIB + " MiB out to a client that stopped reading");

            // The relay goes on when the client reads again: 16 MiB more than the worker had sent arrive.
            InputStream in = client.getInputStream();
            byte[] buffer = new byte[1 << 16];
            long read = 0;
            while (read < settled + 16 * MIB) {
                int n = in.read(buffer);
                assertTrue(n > 0, "the answer ended after " + read + " bytes");
                read += n;
            }
        }
    }

    /** The count once a second has passed with no change. */
    private static long whenSettled(AtomicLong count) throws InterruptedException {
        long last = -1;
        for (int i = 0; i < 30 && count.get() != last; i++) {
            last = count.get();
            Thread.sleep(1_000);
        }
        assertEquals(last, count.get(), "the worker was still sending after 30 s");
        return last;
    }
}
