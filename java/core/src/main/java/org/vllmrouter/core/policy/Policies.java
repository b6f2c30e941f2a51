package org.vllmrouter.core.policy;

import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.config.RouterConfig;

/** Builds a fresh policy instance by name. */
public final class Policies {
    /** Each policy name of the config contract and how to build its implementation; a test keeps the two in step. */
    private static final Map<String, Function<RouterConfig, LoadBalancingPolicy>> IMPLEMENTATIONS = Map.of(
            PolicyNames.RANDOM, cfg -> new RandomPolicy(),
            PolicyNames.ROUND_ROBIN, cfg -> new RoundRobinPolicy(),
            PolicyNames.CACHE_AWARE, cfg -> new CacheAwarePolicy(CacheAwarePolicy.Settings.from(cfg)),
            PolicyNames.POWER_OF_TWO, cfg -> new PowerOfTwoPolicy(),
            PolicyNames.CONSISTENT_HASH, cfg -> new ConsistentHashPolicy(),
            PolicyNames.STICKY_LEAST_LOADED, cfg -> new StickyLeastLoadedPolicy(cfg.maxSessions()),
            PolicyNames.RENDEZVOUS_HASH, cfg -> new RendezvousHashPolicy());

    private Policies() {
    }

    /** A new instance of policy {@code name} configured from {@code cfg}; unknown names are rejected. */
    public static LoadBalancingPolicy create(String name, RouterConfig cfg) {
        Function<RouterConfig, LoadBalancingPolicy> implementation = IMPLEMENTATIONS.get(name);
        if (implementation == null) {
            throw new IllegalArgumentException("Unknown policy '" + name + "'; expected one of "
                    + String.join(", ", PolicyNames.ALL));
        }
        return implementation.apply(cfg);
    }

    /** The names that have an implementation. */
    static Set<String> implemented() {
        return IMPLEMENTATIONS.keySet();
    }
}
