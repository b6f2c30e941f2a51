package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoop;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * An event loop kept busy by a task of the test's until {@link #release()}: nothing else it owns runs meanwhile (accepts,
 * reads, a close's steps). The hold ignores interrupts, so only the test ends it.
 */
final class HeldLoop {
    private final CountDownLatch release = new CountDownLatch(1);

    private HeldLoop() {}

    /** Returns once {@code loop} runs the holding task. */
    static HeldLoop hold(EventLoop loop) throws InterruptedException {
        HeldLoop held = new HeldLoop();
        CountDownLatch holding = new CountDownLatch(1);
        loop.execute(() -> {
            holding.countDown();
            held.awaitRelease();
        });
        assertTrue(holding.await(10, TimeUnit.SECONDS), "the loop took the holding task");
        return held;
    }

    void release() {
        release.countDown();
    }

    private void awaitRelease() {
        boolean interrupted = false;
        while (true) {
            try {
                release.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
