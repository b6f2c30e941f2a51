package org.vllmrouter.core.worker;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.function.LongSupplier;

/**
 * Per-worker circuit breaker with upstream semantics: CLOSED opens after {@code failureThreshold}
 * consecutive failures within {@code window}; OPEN lets requests through again (HALF_OPEN) once {@code timeout}
 * has passed; HALF_OPEN closes after {@code successThreshold} consecutive successes and reopens on any failure.
 * The caller decides what a success is (upstream: 2xx and 4xx).
 *
 * <p>The window is upstream's "time window for failure counting", which upstream declares and never reads: here
 * a failure older than the window no longer counts toward the threshold, so a worker that fails now and then
 * over hours (a rare 5xx) keeps its circuit closed, while the same number of failures in a burst opens it.
 */
public final class CircuitBreaker {

    public enum State { CLOSED, OPEN, HALF_OPEN }

    /** Told about every state change, outside the breaker's lock (e.g. to update metrics). */
    @FunctionalInterface
    public interface TransitionListener {
        void onTransition(State from, State to);
    }

    /**
     * Thresholds and durations; {@code enabled = false} means the breaker never opens.
     *
     * @param window how far back failures count toward {@code failureThreshold}
     */
    public record Config(int failureThreshold, int successThreshold, Duration timeout, Duration window,
                         boolean enabled) {
        public static final Config DEFAULT =
                new Config(10, 3, Duration.ofSeconds(60), Duration.ofSeconds(120), true);

        public Config {
            if (failureThreshold < 1 || successThreshold < 1) {
                throw new IllegalArgumentException("circuit breaker thresholds must be >= 1, got failure="
                        + failureThreshold + " success=" + successThreshold);
            }
            if (timeout == null || timeout.isNegative()) {
                throw new IllegalArgumentException("circuit breaker timeout must be >= 0, got " + timeout);
            }
            if (window == null || window.isNegative() || window.isZero()) {
                throw new IllegalArgumentException("circuit breaker window must be > 0, got " + window);
            }
        }
    }

    private final Config config;
    private final LongSupplier nanoClock;
    private volatile State state = State.CLOSED;
    private volatile TransitionListener listener;
    /**
     * When the current run of consecutive failures happened, oldest first, only those within the window: at most
     * {@code failureThreshold} entries, and no more than the failures one window holds.
     */
    private final ArrayDeque<Long> failureTimes = new ArrayDeque<>();
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
                        failureTimes.clear();
                    } else if (countFailure() >= config.failureThreshold()) {
                        open();
                    }
                }
                case HALF_OPEN -> {
                    if (!success) {
                        open();
                    } else if (++consecutiveSuccesses >= config.successThreshold()) {
                        state = State.CLOSED;
                        failureTimes.clear();
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

    /** Records a failure now and returns how many failures of the current run fall within the window. */
    private int countFailure() {
        long now = nanoClock.getAsLong();
        long window = config.window().toNanos();
        while (!failureTimes.isEmpty() && now - failureTimes.peekFirst() >= window) {
            failureTimes.pollFirst();
        }
        failureTimes.addLast(now);
        return failureTimes.size();
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
        failureTimes.clear();
        consecutiveSuccesses = 0;
    }

    private void notifyIfChanged(State from, State to) {
        TransitionListener l = listener;
        if (from != to && l != null) {
            l.onTransition(from, to);
        }
    }
}
