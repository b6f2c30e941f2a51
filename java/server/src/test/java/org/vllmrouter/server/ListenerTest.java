package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.channel.EventLoop;
import io.netty.util.NetUtil;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** How the router port takes connections a trainer opens all at once. */
@ExtendWith(NoLeaks.class)
class ListenerTest {
    /** More than upstream's backlog of 1024, fewer than a stock kernel's net.core.somaxconn (4096). */
    private static final int AT_ONCE = 1500;

    @Test
    void connectionsPast1024WaitWhileTheRouterIsNotAccepting() throws Exception {
        assumeTrue(NetUtil.SOMAXCONN > AT_ONCE, "net.core.somaxconn is " + NetUtil.SOMAXCONN);
        List<Socket> clients = new ArrayList<>();
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).build());
             RouterServer router = Fixture.start(Fixture.base(mock.urls()))) {
            // Hold the accepting loop, so every connection made meanwhile has to wait in the kernel's queue.
            HeldLoop held = HeldLoop.hold(router.listener().eventLoop());
            try {
                for (int i = 0; i < AT_ONCE; i++) {
                    Socket client = new Socket();
                    clients.add(client);
                    // A connection the full queue dropped would be retried after 1 s, then 3 s: past this timeout.
                    client.connect(new InetSocketAddress("127.0.0.1", router.port()), 2_000);
                }
            } finally {
                held.release();
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

    /**
     * Once its loop wakes, the listener takes every connection waiting, not one per wake-up (Netty 4.2's epoll
     * default): under load a loop wakes every few milliseconds, and a burst waited seconds in the kernel's queue.
     */
    @Test
    void oneWakeUpAcceptsEveryWaitingConnection() throws Exception {
        int waiting = Math.min(RouterServer.ACCEPTS_PER_WAKEUP, NetUtil.SOMAXCONN) - 24;
        List<Socket> clients = new ArrayList<>();
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).build());
             RouterServer router = Fixture.start(Fixture.base(mock.urls()))) {
            EventLoop accepting = router.listener().eventLoop();
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch secondHold = new CountDownLatch(1);
            CountDownLatch secondRelease = new CountDownLatch(1);
            accepting.execute(() -> {
                holding.countDown();
                await(release);
                // A scheduled task runs only after the loop has polled its sockets again: one wake-up in between.
                accepting.schedule(() -> {
                    secondHold.countDown();
                    await(secondRelease);
                }, 1, TimeUnit.MILLISECONDS);
            });
            holding.await();
            int before = router.openConnections();
            try {
                for (int i = 0; i < waiting; i++) {
                    Socket client = new Socket();
                    clients.add(client);
                    client.connect(new InetSocketAddress("127.0.0.1", router.port()), 2_000);
                }
                release.countDown();
                secondHold.await();
                // The loop is held again; connections it handed to the other loop finish registering there.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (router.openConnections() - before < waiting && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertEquals(waiting, router.openConnections() - before, "connections accepted in one wake-up");
            } finally {
                release.countDown();
                secondRelease.countDown();
            }
        } finally {
            for (Socket client : clients) {
                client.close();
            }
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
