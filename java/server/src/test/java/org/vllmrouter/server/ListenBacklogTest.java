package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.util.NetUtil;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** Connections a trainer opens all at once wait to be accepted instead of being dropped past upstream's 1024. */
@ExtendWith(NoLeaks.class)
class ListenBacklogTest {
    /** More than upstream's backlog of 1024, fewer than a stock kernel's net.core.somaxconn (4096). */
    private static final int AT_ONCE = 1500;

    @Test
    void connectionsPast1024WaitWhileTheRouterIsNotAccepting() throws Exception {
        assumeTrue(NetUtil.SOMAXCONN > AT_ONCE, "net.core.somaxconn is " + NetUtil.SOMAXCONN);
        List<Socket> clients = new ArrayList<>();
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).build());
             RouterServer router = Fixture.start(Fixture.base(mock.urls()))) {
            // Hold the accepting loop, so every connection made meanwhile has to wait in the kernel's queue.
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            router.listener().eventLoop().execute(() -> {
                holding.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            holding.await();
            try {
                for (int i = 0; i < AT_ONCE; i++) {
                    Socket client = new Socket();
                    clients.add(client);
                    // A connection the full queue dropped would be retried after 1 s, then 3 s: past this timeout.
                    client.connect(new InetSocketAddress("127.0.0.1", router.port()), 2_000);
                }
            } finally {
                release.countDown();
            }
            // Once accepted, the last one queued is served like any other.
            Socket last = clients.get(clients.size() - 1);
            last.getOutputStream().write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            BufferedReader reader = new BufferedReader(new InputStreamReader(last.getInputStream(), StandardCharsets.US_ASCII));
            assertEquals("HTTP/1.1 200 OK", reader.readLine());
        } finally {
            for (Socket client : clients) {
                client.close();
            }
        }
    }
}
