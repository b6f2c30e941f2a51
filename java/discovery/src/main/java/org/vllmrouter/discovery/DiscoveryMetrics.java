package org.vllmrouter.discovery;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * Upstream's discovery metrics: a counter of changes the sources made to the registry, and two gauges holding how
 * many workers the most recent change added and removed.
 */
final class DiscoveryMetrics {
    private final Counter updates;
    private final Gauge added;
    private final Gauge removed;

    DiscoveryMetrics(PrometheusRegistry registry) {
        updates = Counter.builder().name("vllm_router_discovery_updates_total")
                .help("Changes that service discovery made to the worker registry").register(registry);
        added = Gauge.builder().name("vllm_router_discovery_workers_added")
                .help("Workers added by the most recent service discovery change").register(registry);
        removed = Gauge.builder().name("vllm_router_discovery_workers_removed")
                .help("Workers removed by the most recent service discovery change").register(registry);
    }

    void changed(int addedWorkers, int removedWorkers) {
        updates.inc();
        added.set(addedWorkers);
        removed.set(removedWorkers);
    }
}
