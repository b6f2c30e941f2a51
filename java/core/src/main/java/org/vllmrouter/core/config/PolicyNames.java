package org.vllmrouter.core.config;

import java.util.List;

/**
 * The policy names accepted by {@code policy}, {@code prefill_policy} and {@code decode_policy}: the choices of
 * the {@code --policy} flag, from the config contract. The constants name the policies the engine's code refers
 * to; a test checks each against the contract.
 */
public final class PolicyNames {
    public static final String RANDOM = "random";
    public static final String ROUND_ROBIN = "round_robin";
    public static final String CACHE_AWARE = "cache_aware";
    public static final String KV_AWARE = "kv_aware";
    public static final String POWER_OF_TWO = "power_of_two";
    public static final String CONSISTENT_HASH = "consistent_hash";
    public static final String STICKY_LEAST_LOADED = "sticky_least_loaded";
    public static final String RENDEZVOUS_HASH = "rendezvous_hash";
    public static final String STICKY_BALANCED = "sticky_balanced";

    /** Every accepted name, in the order the flag lists them. */
    public static final List<String> ALL = ConfigContract.get().field("policy").choices();

    private PolicyNames() {
    }

    public static boolean isKnown(String name) {
        return ALL.contains(name);
    }
}
