package org.vllmrouter.redis;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** How long the store is waited for, and the one way every part waits for it. */
final class StoreTimeouts {
    /** How long a routing call waits for the store before it decides on its own and marks the store degraded. */
    static final Duration ROUTE = Duration.ofSeconds(1);
    /** How often last uses are written back and the counters refreshed; also the store's reconnect probe. */
    static final Duration SYNC_INTERVAL = Duration.ofSeconds(1);
    /** Bound of background calls (write-back, reconciling) and of the connection attempt at start. */
    static final Duration COMMAND = Duration.ofSeconds(5);

    private StoreTimeouts() {
    }

    /** Waits for a reply for at most {@code timeout}; a failure or a late reply is the store being unavailable. */
    static <T> T await(Future<T> reply, Duration timeout) throws StoreUnavailableException {
        try {
            return reply.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new StoreUnavailableException("no answer within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            throw new StoreUnavailableException(StoreUnavailableException.oneLine(Scripts.unwrap(e.getCause())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted");
        }
    }
}
