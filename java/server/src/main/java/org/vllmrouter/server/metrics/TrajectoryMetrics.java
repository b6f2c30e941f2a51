package org.vllmrouter.server.metrics;

import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.vllmrouter.core.session.Trajectory;
import org.vllmrouter.core.session.TrajectoryEnds;

/**
 * The trajectories of ended sticky sessions (released, expired or evicted), as histograms: the share of their prompt
 * tokens found in the workers' prefix caches (only sessions whose workers reported a cached count), their turns,
 * and how often they were re-bound to another worker. Made before the session store, which reports to it, and
 * registered with the router's metrics once they exist.
 */
public final class TrajectoryMetrics implements TrajectoryEnds {
    private static final double[] RATE_BUCKETS = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1};
    private static final double[] TURN_BUCKETS = {1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100};
    private static final double[] CHANGE_BUCKETS = {0, 1, 2, 3, 5, 10};

    private final Histogram cachedTokenRate = histogram("vllm_router_sticky_session_cached_token_rate",
            "Share of a session's prompt tokens found in the prefix cache, observed when the session ends", RATE_BUCKETS);
    private final Histogram turns = histogram("vllm_router_sticky_session_turns",
            "Requests of a session, observed when the session ends", TURN_BUCKETS);
    private final Histogram workerChanges = histogram("vllm_router_sticky_session_worker_changes",
            "Times a session was re-bound to a worker, observed when the session ends", CHANGE_BUCKETS);

    @Override
    public void ended(Trajectory trajectory) {
        turns.observe(trajectory.turns());
        workerChanges.observe(trajectory.workerChanges());
        double rate = trajectory.cachedTokenRate();
        if (rate >= 0) {
            cachedTokenRate.observe(rate);
        }
    }

    public void register(PrometheusRegistry registry) {
        registry.register(cachedTokenRate);
        registry.register(turns);
        registry.register(workerChanges);
    }

    private static Histogram histogram(String name, String help, double[] bounds) {
        return Histogram.builder().name(name).help(help).classicOnly().classicUpperBounds(bounds).withoutExemplars()
                .build();
    }
}
