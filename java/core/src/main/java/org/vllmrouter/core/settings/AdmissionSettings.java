package org.vllmrouter.core.settings;

import org.vllmrouter.core.config.RouterConfig;

/** The admission limiter: concurrent requests, the token rate and the queue of those that wait. */
public record AdmissionSettings(int maxConcurrentRequests, Integer rateLimitTokensPerSecond, int queueSize,
                                int queueTimeoutSecs) {
    public static AdmissionSettings from(RouterConfig c) {
        return new AdmissionSettings(c.maxConcurrentRequests(), c.rateLimitTokensPerSecond(), c.queueSize(),
                c.queueTimeoutSecs());
    }
}
