package org.vllmrouter.core.policy;

import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.config.RouterConfig;

/** Builds a fresh policy instance by name. */
public final class Policies {
    private Policies() {
    }

    /** A new instance of policy {@code name} configured from {@code cfg}; unknown names are rejected. */
    public static LoadBalancingPolicy create(String name, RouterConfig cfg) {
        return switch (name) {
            case PolicyNames.RANDOM -> new RandomPolicy();
            case PolicyNames.ROUND_ROBIN -> new RoundRobinPolicy();
            case PolicyNames.POWER_OF_TWO -> new PowerOfTwoPolicy();
            case PolicyNames.CONSISTENT_HASH -> new ConsistentHashPolicy();
            case PolicyNames.RENDEZVOUS_HASH -> new RendezvousHashPolicy();
            case PolicyNames.CACHE_AWARE -> new CacheAwarePolicy(CacheAwarePolicy.Settings.from(cfg));
            case PolicyNames.STICKY_LEAST_LOADED -> new StickyLeastLoadedPolicy();
            default -> throw new IllegalArgumentException("Unknown policy '" + name + "'; expected one of "
                    + String.join(", ", PolicyNames.ALL));
        };
    }
}
