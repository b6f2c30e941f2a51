package org.vllmrouter.core.policy;

import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.session.SessionTable;

/** Builds a fresh policy instance by name. */
public final class Policies {
    /** Each policy name of the config contract and how to build its implementation; a test keeps the two in step. */
    private static final Map<String, BiFunction<PolicySettings, Supplier<SessionTable>, LoadBalancingPolicy>>
            IMPLEMENTATIONS = Map.of(
            PolicyNames.RANDOM, (cfg, sessions) -> new RandomPolicy(),
            PolicyNames.ROUND_ROBIN, (cfg, sessions) -> new RoundRobinPolicy(),
            PolicyNames.CACHE_AWARE, (cfg, sessions) -> new CacheAwarePolicy(cfg.cacheAware()),
            PolicyNames.KV_AWARE, (cfg, sessions) -> new KvAwarePolicy(cfg.kvAware()),
            PolicyNames.POWER_OF_TWO, (cfg, sessions) -> new PowerOfTwoPolicy(),
            PolicyNames.CONSISTENT_HASH, (cfg, sessions) -> new ConsistentHashPolicy(),
            PolicyNames.STICKY_LEAST_LOADED, (cfg, sessions) -> new StickyLeastLoadedPolicy(sessions.get()),
            PolicyNames.RENDEZVOUS_HASH, (cfg, sessions) -> new RendezvousHashPolicy(),
            PolicyNames.STICKY_BALANCED,
            (cfg, sessions) -> new StickyBalancedPolicy(sessions.get(), cfg.stickyBalanced()));

    private Policies() {
    }

    /**
     * A new instance of policy {@code name} configured from {@code cfg}, a session-keeping one taking its table from
     * {@code sessions}; unknown names are rejected.
     */
    public static LoadBalancingPolicy create(String name, PolicySettings cfg, Supplier<SessionTable> sessions) {
        BiFunction<PolicySettings, Supplier<SessionTable>, LoadBalancingPolicy> implementation =
                IMPLEMENTATIONS.get(name);
        if (implementation == null) {
            throw new IllegalArgumentException("Unknown policy '" + name + "'; expected one of "
                    + String.join(", ", PolicyNames.ALL));
        }
        return implementation.apply(cfg, sessions);
    }

    /** The names that have an implementation. */
    static Set<String> implemented() {
        return IMPLEMENTATIONS.keySet();
    }
}
