package org.vllmrouter.server.proxy;

import io.netty.channel.EventLoop;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The request timeout of one proxy's exchanges on one event loop, kept with one timer for the loop instead of one
 * per exchange. Every exchange of a proxy has the same timeout, so deadlines come in start order: a list in start
 * order is also in deadline order, starting and ending an exchange are O(1) and allocate nothing, and the timer only
 * ever waits for the oldest deadline. When it fires it ends the exchanges past their deadline and waits for the next
 * oldest. Scheduling and cancelling a task per request cost a task object and two operations on the loop's
 * scheduled-task heap each time. Used only on its loop, whose clock it reads.
 */
final class RequestDeadlines {
    /** An exchange with a deadline; the links are the list's. */
    abstract static class Timed {
        private Timed older;
        private Timed newer;
        private long deadlineNanos;
        private boolean listed;

        /** The deadline passed before the exchange ended; it has left the list already. */
        abstract void deadlinePassed();
    }

    private final EventLoop loop;
    private final long timeoutNanos;
    private Timed oldest;
    private Timed newest;
    private ScheduledFuture<?> timer;
    private boolean expiring;

    RequestDeadlines(EventLoop loop, long timeoutNanos) {
        this.loop = loop;
        this.timeoutNanos = timeoutNanos;
    }

    /** Starts {@code t}'s timeout now. */
    void add(Timed t) {
        t.deadlineNanos = loop.ticker().nanoTime() + timeoutNanos;
        t.older = newest;
        t.newer = null;
        if (newest == null) {
            oldest = t;
        } else {
            newest.newer = t;
        }
        newest = t;
        t.listed = true;
        // While expiring, the sweep arms the timer for whatever is oldest once it is done.
        if (timer == null && !expiring) {
            arm(t.deadlineNanos);
        }
    }

    /** Ends {@code t}'s timeout; nothing when it has none. The timer stays: it finds a later oldest and waits again. */
    void remove(Timed t) {
        if (!t.listed) {
            return;
        }
        t.listed = false;
        if (t.older == null) {
            oldest = t.newer;
        } else {
            t.older.newer = t.newer;
        }
        if (t.newer == null) {
            newest = t.older;
        } else {
            t.newer.older = t.older;
        }
        t.older = null;
        t.newer = null;
    }

    private void arm(long deadlineNanos) {
        timer = loop.schedule(this::expire, Math.max(0, deadlineNanos - loop.ticker().nanoTime()), TimeUnit.NANOSECONDS);
    }

    private void expire() {
        timer = null;
        expiring = true;
        try {
            long now = loop.ticker().nanoTime();
            Timed t;
            while ((t = oldest) != null && t.deadlineNanos - now <= 0) {
                remove(t);
                t.deadlinePassed();
            }
        } finally {
            expiring = false;
            if (oldest != null) {
                arm(oldest.deadlineNanos);
            }
        }
    }
}
