package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** A close whose event loop no longer runs its tasks. */
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
}
