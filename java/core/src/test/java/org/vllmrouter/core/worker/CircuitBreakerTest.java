package org.vllmrouter.core.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.worker.CircuitBreaker.State;

class CircuitBreakerTest {
    private final AtomicLong now = new AtomicLong();
    private final List<String> transitions = new ArrayList<>();

    private static final Duration WINDOW = Duration.ofSeconds(30);

    private CircuitBreaker breaker(int failures, int successes, boolean enabled) {
        CircuitBreaker cb = new CircuitBreaker(
                new CircuitBreaker.Config(failures, successes, Duration.ofSeconds(10), WINDOW, enabled), now::get);
        cb.setListener((from, to) -> transitions.add(from + "->" + to));
        return cb;
    }

    @Test
    void opensAfterConsecutiveFailuresOnly() {
        CircuitBreaker cb = breaker(3, 2, true);
        cb.recordOutcome(false);
        cb.recordOutcome(false);
        cb.recordOutcome(true);
        cb.recordOutcome(false);
        cb.recordOutcome(false);
        assertEquals(State.CLOSED, cb.state());
        cb.recordOutcome(false);
        assertEquals(State.OPEN, cb.state());
        assertFalse(cb.canExecute());
        assertEquals(List.of("CLOSED->OPEN"), transitions);
    }

    @Test
    void halfOpensAfterTimeoutAndClosesAfterSuccesses() {
        CircuitBreaker cb = breaker(1, 2, true);
        cb.recordOutcome(false);
        now.addAndGet(Duration.ofSeconds(10).toNanos() - 1);
        assertFalse(cb.canExecute());
        now.addAndGet(1);
        assertTrue(cb.canExecute());
        assertEquals(State.HALF_OPEN, cb.state());
        cb.recordOutcome(true);
        assertEquals(State.HALF_OPEN, cb.state());
        cb.recordOutcome(true);
        assertEquals(State.CLOSED, cb.state());
        assertEquals(List.of("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->CLOSED"), transitions);
    }

    @Test
    void failureInHalfOpenReopensAndRestartsTheTimeout() {
        CircuitBreaker cb = breaker(1, 3, true);
        cb.recordOutcome(false);
        now.addAndGet(Duration.ofSeconds(10).toNanos());
        cb.recordOutcome(true);
        cb.recordOutcome(false);
        assertEquals(State.OPEN, cb.state());
        now.addAndGet(Duration.ofSeconds(5).toNanos());
        assertFalse(cb.canExecute());
        assertEquals(List.of("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->OPEN"), transitions);
    }

    @Test
    void failuresOlderThanTheWindowDoNotCount() {
        CircuitBreaker cb = breaker(3, 1, true);
        cb.recordOutcome(false);
        now.addAndGet(WINDOW.toNanos() / 2);
        cb.recordOutcome(false);
        now.addAndGet(WINDOW.toNanos() / 2);
        // Three consecutive failures, but the first is a whole window old by now.
        cb.recordOutcome(false);
        assertEquals(State.CLOSED, cb.state());
        now.addAndGet(1);
        cb.recordOutcome(false);
        assertEquals(State.OPEN, cb.state(), "the last three failures fall within one window");
        assertEquals(List.of("CLOSED->OPEN"), transitions);
    }

    @Test
    void aSlowTrickleOfFailuresNeverOpensTheCircuit() {
        CircuitBreaker cb = breaker(2, 1, true);
        for (int i = 0; i < 100; i++) {
            cb.recordOutcome(false);
            now.addAndGet(WINDOW.toNanos());
        }
        assertTrue(cb.canExecute());
        assertTrue(transitions.isEmpty());
    }

    @Test
    void aSuccessStillEndsTheRunWithinTheWindow() {
        CircuitBreaker cb = breaker(2, 1, true);
        cb.recordOutcome(false);
        cb.recordOutcome(true);
        cb.recordOutcome(false);
        assertEquals(State.CLOSED, cb.state());
        cb.recordOutcome(false);
        assertEquals(State.OPEN, cb.state());
    }

    @Test
    void disabledBreakerNeverOpens() {
        CircuitBreaker cb = breaker(1, 1, false);
        for (int i = 0; i < 100; i++) {
            cb.recordOutcome(false);
        }
        assertTrue(cb.canExecute());
        assertEquals(State.CLOSED, cb.state());
        assertTrue(transitions.isEmpty());
    }

    @Test
    void rejectsNonsenseThresholds() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new CircuitBreaker.Config(0, 1, Duration.ZERO, WINDOW, true));
        assertTrue(e.getMessage().contains("failure=0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new CircuitBreaker.Config(1, 1, Duration.ZERO, Duration.ofSeconds(-1), true));
        assertTrue(e.getMessage().contains("window must be > 0"), e.getMessage());
    }
}
