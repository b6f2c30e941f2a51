package org.vllmrouter.discovery;

import java.time.Duration;
import java.util.logging.Logger;

/** At most one warning per interval; the next one that gets through says how many were held back meanwhile. */
final class RateLimitedLog {
    private final Logger log;
    private final long intervalNanos;
    private long nextAllowed;
    private boolean started;
    private int suppressed;

    RateLimitedLog(Logger log, Duration interval) {
        this.log = log;
        this.intervalNanos = interval.toNanos();
    }

    synchronized void warning(String message) {
        long now = System.nanoTime();
        if (started && now - nextAllowed < 0) {
            suppressed++;
            return;
        }
        started = true;
        nextAllowed = now + intervalNanos;
        log.warning(suppressed == 0 ? message : message + " (" + suppressed + " more since the last such warning)");
        suppressed = 0;
    }
}
