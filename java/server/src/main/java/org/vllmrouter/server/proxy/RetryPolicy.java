package org.vllmrouter.server.proxy;

import java.util.concurrent.ThreadLocalRandom;
import org.vllmrouter.core.settings.RetrySettings;

/**
 * Upstream's retry settings: {@code maxAttempts} counts attempts (1 means no retry), the backoff before attempt n+1 is
 * {@code initial * multiplier^(n-1)} capped at {@code max}, then scaled by {@code 1 + U[-jitter, +jitter]}.
 */
public record RetryPolicy(int maxAttempts, long initialBackoffMs, long maxBackoffMs, double multiplier, double jitter) {

    public static final RetryPolicy NONE = new RetryPolicy(1, 0, 0, 1, 0);

    /** The configured retries; {@code disable_retries} means a single attempt. */
    public static RetryPolicy from(RetrySettings settings) {
        int attempts = settings.disabled() ? 1 : Math.max(1, settings.maxRetries());
        return new RetryPolicy(attempts, settings.initialBackoffMs(), settings.maxBackoffMs(),
                settings.backoffMultiplier(), settings.jitterFactor());
    }

    static boolean retryableStatus(int status) {
        return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
    }

    /** Backoff in nanoseconds after the {@code failedAttempt}-th attempt failed (1-based). */
    long backoffNanos(int failedAttempt) {
        double base = Math.min(maxBackoffMs, initialBackoffMs * Math.pow(multiplier, failedAttempt - 1));
        double factor = jitter <= 0 ? 1 : 1 + ThreadLocalRandom.current().nextDouble(-jitter, jitter);
        return (long) (Math.max(0, base * factor) * 1_000_000L);
    }
}
