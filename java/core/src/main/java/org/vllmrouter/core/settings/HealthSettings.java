package org.vllmrouter.core.settings;

import org.vllmrouter.core.config.RouterConfig;

/**
 * How workers are probed: by the health checker while the router serves, and by the wait for a worker to answer
 * before it is added (at start, through the admin API, from discovery).
 */
public record HealthSettings(int checkTimeoutSecs, int checkIntervalSecs, String checkEndpoint,
                             int startupTimeoutSecs, int startupCheckIntervalSecs) {
    public static HealthSettings from(RouterConfig c) {
        return new HealthSettings(c.healthCheckTimeoutSecs(), c.healthCheckIntervalSecs(), c.healthCheckEndpoint(),
                c.workerStartupTimeoutSecs(), c.workerStartupCheckInterval());
    }
}
