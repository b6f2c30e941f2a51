package org.vllmrouter.discovery;

import java.time.Duration;

/** Exponential back-off between reconnection attempts: 1 s, 2 s, 4 s ... up to 300 s, as upstream; reset on success. */
final class Backoff {
    static final Duration FIRST = Duration.ofSeconds(1);
    static final Duration MAX = Duration.ofSeconds(300);

    private Duration next = FIRST;

    /** The delay before the next attempt; each call doubles the one after it. */
    synchronized Duration next() {
        Duration now = next;
        Duration doubled = now.multipliedBy(2);
        next = doubled.compareTo(MAX) > 0 ? MAX : doubled;
        return now;
    }

    synchronized void reset() {
        next = FIRST;
    }
}
