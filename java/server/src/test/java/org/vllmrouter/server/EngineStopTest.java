package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A stop signal at each point of the engine's life: the exits it asks for and the drains it runs. The process
 * itself (a real signal, a real exit status) is EngineRunnerTest's.
 */
class EngineStopTest {
    private final List<Integer> exits = new ArrayList<>();
    private final EngineStop stop = new EngineStop(exits::add);

    /** A server that counts its drains; {@code failing} makes each drain throw, as a jar overwritten in place did. */
    private static final class Server implements AutoCloseable {
        final AtomicInteger closes = new AtomicInteger();
        final boolean failing;

        Server(boolean failing) {
            this.failing = failing;
        }

        @Override
        public void close() {
            closes.incrementAndGet();
            if (failing) {
                throw new NoClassDefFoundError("org/vllmrouter/server/Gone");
            }
        }
    }

    @Test
    void aSignalBeforeTheListenerBindsEndsTheProcessAtOnceWithZero() {
        stop.onSignal();
        assertEquals(List.of(0), exits);
    }

    @Test
    void aSignalWhileTheListenerBindsIsCarriedOutOnceTheServerExists() {
        stop.binding();
        stop.onSignal();
        assertEquals(List.of(), exits, "the start was cut short after its listener bound");
        Server server = new Server(false);
        assertFalse(stop.serving(server), "a server a stop came for was reported as serving");
        assertEquals(0, stop.drain());
        assertEquals(1, server.closes.get());
        assertEquals(List.of(), exits, "the starting thread returns its status itself");
    }

    /** A drain that fails still ends the process, with 1: no later stop signal would end it otherwise. */
    @ParameterizedTest(name = "drain fails: {0}")
    @CsvSource({"false, 0", "true, 1"})
    void aSignalOnceServingDrainsAndEndsWithTheDrainsStatus(boolean drainFails, int status) {
        stop.binding();
        Server server = new Server(drainFails);
        assertTrue(stop.serving(server));
        assertEquals(0, server.closes.get());
        stop.onSignal();
        assertEquals(1, server.closes.get());
        assertEquals(List.of(status), exits);
    }

    @Test
    void aLifelineDrainSaysWhetherItDrained() {
        stop.binding();
        assertTrue(stop.serving(new Server(false)));
        assertEquals(0, stop.drain());
        EngineStop failing = new EngineStop(exits::add);
        failing.binding();
        assertTrue(failing.serving(new Server(true)));
        assertEquals(1, failing.drain());
        assertEquals(List.of(), exits, "the caller of a lifeline drain exits by itself");
    }

    @Test
    void theJvmsShutdownDrainsAServingRouterAndLeavesAStartingOneToTheJvm() {
        stop.onShutdown();
        stop.binding();
        stop.onShutdown();
        assertEquals(List.of(), exits, "a shutdown before serving must keep the JVM's own exit status");
        Server server = new Server(false);
        assertTrue(stop.serving(server), "a shutdown hook's call is not a stop signal kept for the start");
        stop.onShutdown();
        assertEquals(1, server.closes.get());
        assertEquals(List.of(0), exits);
    }

    @Test
    void aSecondStopWaitsForTheFirstDrain() throws Exception {
        CountDownLatch draining = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger closes = new AtomicInteger();
        stop.binding();
        stop.serving(() -> {
            closes.incrementAndGet();
            draining.countDown();
            release.await();
        });
        Thread first = new Thread(stop::onSignal);
        first.start();
        assertTrue(draining.await(10, TimeUnit.SECONDS));
        Thread second = new Thread(stop::drain);
        second.start();
        // Unlocked, the second drain would close the server again and wait on the latch too (WAITING, not BLOCKED).
        assertTrue(ResilienceTest.eventually(() -> second.getState() == Thread.State.BLOCKED || closes.get() > 1));
        assertEquals(1, closes.get(), "a second drain ran while the first one was still draining");
        release.countDown();
        first.join(10_000);
        second.join(10_000);
        assertEquals(List.of(0), exits);
    }
}
