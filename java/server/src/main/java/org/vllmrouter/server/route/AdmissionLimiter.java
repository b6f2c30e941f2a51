package org.vllmrouter.server.route;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Ticker;
import java.util.ArrayDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.settings.AdmissionSettings;

/**
 * Upstream's limiter for inference routes: a token bucket (capacity {@code max_concurrent_requests}, refilled at
 * {@code rate_limit_tokens_per_second}, a request takes a token and gives it back when its response head is out)
 * with a bounded FIFO queue whose waiters time out with 408; a full queue (or no queue) answers 429 with Retry-After.
 * The bucket reads time from a {@link Ticker} so tests can freeze it: with real time a held token is refilled within
 * a second, and a test could never be sure the next request finds the bucket empty.
 */
public final class AdmissionLimiter {

    interface Ticket {
        void admitted();

        /** {@code status} is 429 or 408; {@code retryAfterSecs} is set for 429 only. */
        void rejected(int status, long retryAfterSecs);
    }

    private record Waiter(EventExecutor executor, Ticket ticket, long deadlineNanos) {}

    private final double capacity;
    private final double ratePerNano;
    private final int queueSize;
    private final long queueTimeoutNanos;
    private final EventExecutor scheduler;
    private final Ticker clock;
    private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
    private double tokens;
    private long lastRefill;
    private ScheduledFuture<?> drain;

    public AdmissionLimiter(AdmissionSettings settings, EventExecutor scheduler, Ticker clock) {
        this.capacity = Math.max(1, settings.maxConcurrentRequests());
        Integer tokensPerSecond = settings.rateLimitTokensPerSecond();
        double perSecond = tokensPerSecond == null ? capacity : Math.max(1, tokensPerSecond);
        this.ratePerNano = perSecond / TimeUnit.SECONDS.toNanos(1);
        this.queueSize = Math.max(0, settings.queueSize());
        this.queueTimeoutNanos = TimeUnit.SECONDS.toNanos(Math.max(0, settings.queueTimeoutSecs()));
        this.scheduler = scheduler;
        this.clock = clock;
        this.tokens = capacity;
        this.lastRefill = clock.nanoTime();
    }

    /** Calls exactly one of the ticket's methods, on {@code executor}. */
    void acquire(EventExecutor executor, Ticket ticket) {
        long retryAfter;
        synchronized (this) {
            refill(clock.nanoTime());
            if (waiters.isEmpty() && tokens >= 1) {
                tokens -= 1;
                retryAfter = -1;
            } else if (waiters.size() < queueSize) {
                waiters.addLast(new Waiter(executor, ticket, clock.nanoTime() + queueTimeoutNanos));
                scheduleDrain(0);
                return;
            } else {
                retryAfter = Math.max(1, (long) Math.ceil((1 - tokens) / ratePerNano / TimeUnit.SECONDS.toNanos(1)));
            }
        }
        if (retryAfter < 0) {
            if (executor.inEventLoop()) {
                ticket.admitted();
            } else {
                executor.execute(ticket::admitted);
            }
        } else {
            long secs = retryAfter;
            executor.execute(() -> ticket.rejected(429, secs));
        }
    }

    /** Gives back the token of an admitted request. */
    void release() {
        synchronized (this) {
            refill(clock.nanoTime());
            tokens = Math.min(capacity, tokens + 1);
            if (!waiters.isEmpty()) {
                scheduleDrain(0);
            }
        }
    }

    private void refill(long now) {
        tokens = Math.min(capacity, tokens + (now - lastRefill) * ratePerNano);
        lastRefill = now;
    }

    /** A drain already due by then is enough; one due later (waiting for a refill) is brought forward. */
    private void scheduleDrain(long delayNanos) {
        if (drain != null && !drain.isDone()) {
            if (drain.getDelay(TimeUnit.NANOSECONDS) <= delayNanos) {
                return;
            }
            drain.cancel(false);
        }
        drain = scheduler.schedule(this::drainQueue, delayNanos, TimeUnit.NANOSECONDS);
    }

    private void drainQueue() {
        synchronized (this) {
            long now = clock.nanoTime();
            refill(now);
            drain = null;
            while (!waiters.isEmpty()) {
                Waiter head = waiters.peekFirst();
                if (now - head.deadlineNanos >= 0) {
                    waiters.pollFirst();
                    head.executor.execute(() -> head.ticket.rejected(408, 0));
                } else if (tokens >= 1) {
                    tokens -= 1;
                    waiters.pollFirst();
                    head.executor.execute(head.ticket::admitted);
                } else {
                    break;
                }
            }
            if (!waiters.isEmpty()) {
                long untilToken = (long) Math.ceil((1 - tokens) / ratePerNano);
                long untilDeadline = waiters.peekFirst().deadlineNanos - now;
                scheduleDrain(Math.max(1, Math.min(untilToken, untilDeadline)));
            }
        }
    }
}
