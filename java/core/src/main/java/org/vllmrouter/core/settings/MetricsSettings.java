package org.vllmrouter.core.settings;

import org.vllmrouter.core.config.RouterConfig;

/** The Prometheus listener; the flag defaults when the fields are null (upstream always starts it). */
public record MetricsSettings(String host, int port) {
    public static MetricsSettings from(RouterConfig c) {
        return new MetricsSettings(c.effectivePrometheusHost(), c.effectivePrometheusPort());
    }
}
