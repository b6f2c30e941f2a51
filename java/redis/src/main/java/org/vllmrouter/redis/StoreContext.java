package org.vllmrouter.redis;

import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.function.LongSupplier;

/**
 * What every table of one store shares: its name in messages (password hidden), the session clock (milliseconds;
 * every replica's clock must agree to well within the TTL), its health, its scripts, its single-key commands and
 * its invalidation tracking.
 */
record StoreContext(String description, LongSupplier clockMillis, StoreHealth health, ScriptGateway scripts,
                    RedisClusterAsyncCommands<String, String> commands, InvalidationTracking tracking) {
    long nowMillis() {
        return clockMillis.getAsLong();
    }
}
