package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** How a router stops: a close whose event loop no longer runs its tasks, and a start that fails half-way. */
@ExtendWith(NoLeaks.class)
class RouterCloseTest {
    /**
     * The engine's stop signal drains with this close and exits with its status; a close that waited for the loop
     * forever left a router no stop signal ended (seen when its jar was overwritten and the loop's thread died).
     */
    @Test
    void aCloseWhoseEventLoopIsHeldEndsWithAnErrorInsteadOfWaitingForever() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).build());
             RouterServer router = Fixture.start(Fixture.base(mock.urls()))) {
            HeldLoop held = HeldLoop.hold(router.listener().eventLoop());
            try {
                CompletableFuture<Void> closing = CompletableFuture.runAsync(router::close);
                ExecutionException failed = assertThrows(ExecutionException.class,
                        () -> closing.get(60, TimeUnit.SECONDS));
                assertTrue(failed.getCause() instanceof IllegalStateException, failed.getCause().toString());
                assertTrue(failed.getCause().getMessage().contains("event loops did not stop"),
                        failed.getCause().getMessage());
            } finally {
                held.release();
            }
        }
    }

    /**
     * A start that fails after binding the router port (the metrics port is taken) stops what it had started, as a
     * close does: the router port is free again for the next attempt.
     */
    @Test
    void aStartThatFailsAtItsLastStepFreesTheRouterPort() throws Exception {
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        int routerPort;
        try (ServerSocket probe = new ServerSocket(0, 1, loopback)) {
            routerPort = probe.getLocalPort();
        }
        try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(1).build());
             ServerSocket taken = new ServerSocket(0, 1, loopback)) {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("port", routerPort);
            cfg.put("prometheus_host", "127.0.0.1");
            cfg.put("prometheus_port", taken.getLocalPort());
            RouterStartException e = assertThrows(RouterStartException.class, () -> Fixture.start(cfg));
            assertTrue(e.getMessage().startsWith("Failed to bind the Prometheus listener"), e.getMessage());
            try (ServerSocket again = new ServerSocket()) {
                again.bind(new InetSocketAddress(loopback, routerPort));
            }
        }
    }
}
