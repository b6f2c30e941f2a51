package org.vllmrouter.core.settings;

import org.vllmrouter.core.config.RouterConfig;

/** Retrying a request on another worker: how many attempts and the backoff between them. */
public record RetrySettings(int maxRetries, int initialBackoffMs, int maxBackoffMs, double backoffMultiplier,
                            double jitterFactor, boolean disabled) {
    public static RetrySettings from(RouterConfig c) {
        return new RetrySettings(c.retryMaxRetries(), c.retryInitialBackoffMs(), c.retryMaxBackoffMs(),
                c.retryBackoffMultiplier(), c.retryJitterFactor(), c.disableRetries());
    }
}
