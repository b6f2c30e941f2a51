package org.vllmrouter.core.worker;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * Per-worker circuit breaker with upstream semantics: CLOSED opens after {@code failureThreshold}
 * consecutive failures; OPEN lets requests through again (HALF_OPEN) once {@code timeout} has passed;
 * HALF_OPEN closes after {@code successThreshold} consecutive successes and reopens on any failure.
 * The caller decides what a success is (upstream: 2xx and 4xx).
 */
public final class CircuitBreaker {

    public enum State { CLOSED, OPEN, HALF_OPEN }

    /** Told about every state change, outside the breaker's lock (e.g. to update metrics). */
    @FunctionalInterface
    public interface TransitionListener {
        void onTransition(State from, State to);
    }

    /** Thresholds; {@code enabled = false} means the breaker never opens. */
    public record Config(int failureThreshold, int successThreshold, Duration timeout, boolean enabled) {
        public static final Config DEFAULT = new Config(10, 3, Duration.ofSeconds(60), true);

        public Config {
            if (failureThreshold < 1 || successThreshold < 1) {
                throw new IllegalArgumentException("circuit breaker thresholds must be >= 1, got failure="
                        + failureThreshold + " success=" + successThreshold);
            }
            if (timeout == null || timeout.isNegative()) {
                throw new IllegalArgumentException("circuit breaker timeout must be >= 0, got " + timeout);
            }
        }
    }

    private final Config config;
    private final LongSupplier nanoClock;
    private volatile State state = State.CLOSED;
    private volatile TransitionListener listener;
    private int consecutiveFailures;
    private int consecutiveSuccesses;
    private long openedAtNanos;

    public CircuitBreaker(Config config) {
        this(config, System::nanoTime);
    }

    public CircuitBreaker(Config config, LongSupplier nanoClock) {
        this.config = config;
        this.nanoClock = nanoClock;
    }

    public Config config() {
        return config;
    }

    public void setListener(TransitionListener listener) {
        this.listener = listener;
    }

    public State state() {
        if (state == State.OPEN) {
            maybeHalfOpen();
        }
        return state;
    }

    /** True when CLOSED or HALF_OPEN (an OPEN breaker whose timeout has passed becomes HALF_OPEN here). */
    public boolean canExecute() {
        if (!config.enabled()) {
            return true;
        }
        // Fast path without locking: the routing hot path calls this for every candidate.
        return state != State.OPEN || maybeHalfOpen() != State.OPEN;
    }

    public void recordOutcome(boolean success) {
        if (!config.enabled()) {
            return;
        }
        State before;
        State afterTimeout;
        State after;
        synchronized (this) {
            before = state;
            advanceIfTimedOut();
            afterTimeout = state;
            switch (afterTimeout) {
                case CLOSED -> {
                    if (success) {
                        consecutiveFailures = 0;
                    } else if (++consecutiveFailures >= config.failureThreshold()) {
                        open();
                    }
                }
                case HALF_OPEN -> {
                    if (!success) {
                        open();
                    } else if (++consecutiveSuccesses >= config.successThreshold()) {
                        state = State.CLOSED;
                        consecutiveFailures = 0;
                        consecutiveSuccesses = 0;
                    }
                }
                case OPEN -> {
                    // Outcomes of requests dispatched before the breaker opened do not move it.
                }
            }
            after = state;
        }
        notifyIfChanged(before, afterTimeout);
        notifyIfChanged(afterTimeout, after);
    }

    private State maybeHalfOpen() {
        State from;
        State to;
        synchronized (this) {
            from = state;
            advanceIfTimedOut();
            to = state;
        }
        notifyIfChanged(from, to);
        return to;
    }

    private void advanceIfTimedOut() {
        if (state == State.OPEN && nanoClock.getAsLong() - openedAtNanos >= config.timeout().toNanos()) {
            state = State.HALF_OPEN;
            consecutiveSuccesses = 0;
        }
    }

    private void open() {
        state = State.OPEN;
        openedAtNanos = nanoClock.getAsLong();
        consecutiveFailures = 0;
        consecutiveSuccesses = 0;
    }

    private void notifyIfChanged(State from, State to) {
        TransitionListener l = listener;
        if (from != to && l != null) {
            l.onTransition(from, to);
        }
    }
}
