package org.vllmrouter.redis;

import java.util.logging.Logger;

/**
 * Whether the store answers, as routing and reporting see it. A failure makes it degraded and offline at once; a
 * recovery brings it back online (routing asks the store again) once every table is reconciled, then ends the
 * degraded state once the routine work went through too, in both steps only if no failure happened meanwhile.
 */
final class StoreHealth {
    private static final Logger LOG = Logger.getLogger(RedisSessionStore.class.getName());

    private final String description;
    /** Counts failures; a recovery changes the flags below only when none happened since it began. */
    private long failures;
    /** From a failure until a recovery is complete: what {@code /sessions} and the metric report. */
    private volatile boolean degraded;
    /** From a failure until a recovery has reconciled: routing decides on this router's own view meanwhile. */
    private volatile boolean offline;

    StoreHealth(String description) {
        this.description = description;
    }

    boolean degraded() {
        return degraded;
    }

    /** Routing and releases do not call the store, and bindings made meanwhile are this router's own. */
    boolean offline() {
        return offline;
    }

    /** Routing and background work stop using the store until a recovery succeeds. */
    void markDegraded(String why) {
        boolean first;
        synchronized (this) {
            failures++;
            offline = true;
            first = !degraded;
            degraded = true;
        }
        if (first) {
            LOG.warning("Session store " + description + " unavailable (" + why + "): routing on this router's own "
                    + "view of the sessions until it answers again");
        }
    }

    synchronized long failures() {
        return failures;
    }

    /** Routing uses the store again, unless a failure happened since {@code failuresBefore}. */
    synchronized boolean backOnline(long failuresBefore) {
        if (failures == failuresBefore) {
            offline = false;
        }
        return !offline;
    }

    /** The recovery is complete, unless a failure happened since {@code failuresBefore}. */
    synchronized boolean recovered(long failuresBefore) {
        if (failures != failuresBefore || !degraded) {
            return false;
        }
        degraded = false;
        return true;
    }
}
