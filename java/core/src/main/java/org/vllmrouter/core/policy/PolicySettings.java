package org.vllmrouter.core.policy;

import java.time.Duration;
import org.vllmrouter.core.config.RouterConfig;

/**
 * The policies a router runs and their parameters.
 *
 * @param prefillPolicy null: {@code policy}
 * @param decodePolicy null: {@code policy}
 */
public record PolicySettings(String policy, String prefillPolicy, String decodePolicy,
                             CacheAwarePolicy.Settings cacheAware, KvAwarePolicy.Settings kvAware,
                             StickyBalancedPolicy.Settings stickyBalanced) {
    public static PolicySettings from(RouterConfig c) {
        Integer affinityTtl = c.kvAwareSessionAffinityTtlSecs();
        return new PolicySettings(c.policy(), c.prefillPolicy(), c.decodePolicy(),
                new CacheAwarePolicy.Settings(c.cacheThreshold(), c.balanceAbsThreshold(), c.balanceRelThreshold(),
                        c.evictionIntervalSecs(), c.maxTreeSize()),
                new KvAwarePolicy.Settings(c.routerTemperature(), c.kvPenaltyHost(), c.kvPenaltyExternal(),
                        c.kvPenaltyDisk(), affinityTtl == null ? null : Duration.ofSeconds(affinityTtl)),
                new StickyBalancedPolicy.Settings(c.stickyBalancedGroupMargin(), c.stickyBalancedGroupSeparator(),
                        c.stickyBalancedMoveMargin(), c.stickyBalancedMoveKvUsage(),
                        Duration.ofNanos(Math.round(c.stickyBalancedToolHoldSecs() * 1e9)), c.stickyBalancedGroupByKv()));
    }

    /** These settings with cache_aware's replaced. */
    public PolicySettings withCacheAware(CacheAwarePolicy.Settings settings) {
        return new PolicySettings(policy, prefillPolicy, decodePolicy, settings, kvAware, stickyBalanced);
    }

    /** These settings with sticky_balanced's replaced. */
    public PolicySettings withStickyBalanced(StickyBalancedPolicy.Settings settings) {
        return new PolicySettings(policy, prefillPolicy, decodePolicy, cacheAware, kvAware, settings);
    }
}
