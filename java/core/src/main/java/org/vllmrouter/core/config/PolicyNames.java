package org.vllmrouter.core.config;

import java.util.List;

/** The policy names accepted by {@code policy}, {@code prefill_policy} and {@code decode_policy}. */
public final class PolicyNames {
    public static final String RANDOM = "random";
    public static final String ROUND_ROBIN = "round_robin";
    public static final String CACHE_AWARE = "cache_aware";
    public static final String POWER_OF_TWO = "power_of_two";
    public static final String CONSISTENT_HASH = "consistent_hash";
    public static final String STICKY_LEAST_LOADED = "sticky_least_loaded";
    public static final String RENDEZVOUS_HASH = "rendezvous_hash";

    public static final List<String> ALL = List.of(
            RANDOM, ROUND_ROBIN, CACHE_AWARE, POWER_OF_TWO, CONSISTENT_HASH, STICKY_LEAST_LOADED, RENDEZVOUS_HASH);

    private PolicyNames() {
    }

    public static boolean isKnown(String name) {
        return ALL.contains(name);
    }
}
