package org.vllmrouter.redis;

import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.TrackingArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.push.PushMessage;
import io.lettuce.core.codec.StringCodec;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Client-side tracking for the near caches: {@code CLIENT TRACKING} in broadcast mode over the binding keys, on
 * each connection that carries scripts (so a script's reply is applied before any later invalidation of its keys),
 * and the server's invalidations handed to the near cache of the key's pool.
 */
final class InvalidationTracking {
    private static final TrackingArgs TRACKING =
            TrackingArgs.Builder.enabled().bcast().prefixes(Keys.BINDING_PREFIX).noloop();

    private final StoreConnection connection;
    /** The connections tracking is on: when one of them drops, invalidations may have been missed. */
    private final Set<RedisChannelHandler<?, ?>> tracked = ConcurrentHashMap.newKeySet();
    /** Every table's near caches, by their pool's hash tag. */
    private final ConcurrentHashMap<String, NearCache> cachesByTag = new ConcurrentHashMap<>();

    InvalidationTracking(StoreConnection connection) {
        this.connection = connection;
    }

    void register(Pool pool) {
        cachesByTag.put(pool.keys.tag(), pool.cache);
    }

    /** Whether invalidations may have been missed when {@code channel} drops. */
    boolean isTracked(RedisChannelHandler<?, ?> channel) {
        return tracked.contains(channel);
    }

    /** Turns tracking on where scripts run (again after a failure: a primary may be new, or have restarted). */
    void track() throws StoreUnavailableException {
        Set<RedisChannelHandler<?, ?>> current = new HashSet<>();
        for (StatefulRedisConnection<String, String> c : connection.scriptConnections()) {
            track(c);
            current.add((RedisChannelHandler<?, ?>) c);
        }
        tracked.retainAll(current);
    }

    /** A connection that kept its tracking refuses the same prefix again: that is tracking on, too. */
    private void track(StatefulRedisConnection<String, String> c) throws StoreUnavailableException {
        try {
            StoreTimeouts.await(c.async().clientTracking(TRACKING), StoreTimeouts.COMMAND);
        } catch (StoreUnavailableException e) {
            if (!e.getMessage().contains("overlaps")) {
                throw e;
            }
        }
        tracked.add((RedisChannelHandler<?, ?>) c);
    }

    /** The store is closing: a connection that drops now is no fault. */
    void stop() {
        tracked.clear();
    }

    /** A key a table may have cached changed on the server; {@code null} keys: the database was flushed. */
    void onPush(PushMessage message) {
        if (!"invalidate".equals(message.getType())) {
            return;
        }
        List<Object> content = message.getContent(StringCodec.UTF8::decodeKey);
        if (content.size() < 2 || !(content.get(1) instanceof List<?> keys)) {
            cachesByTag.values().forEach(NearCache::forgetAll);
            return;
        }
        for (Object key : keys) {
            Keys.BindingKey binding = Keys.parseBinding(String.valueOf(key));
            NearCache cache = binding == null ? null : cachesByTag.get(binding.tag());
            if (cache != null) {
                cache.invalidated(binding.sessionId(), () -> connection.commands().get(String.valueOf(key)));
            }
        }
    }
}
