package org.vllmrouter.redis;

import io.lettuce.core.ScoredValue;
import io.lettuce.core.ZAddArgs;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

/**
 * Writes back the last uses of sessions served from the near caches, which reach the store about once a second
 * instead of on every request (a sweep waits for them, see {@link RedisSessionTable#SWEEP_GRACE_MILLIS}).
 */
final class LastUseWriteBack {
    /** Members per write-back command. */
    private static final int BATCH = 512;

    private final RedisClusterAsyncCommands<String, String> commands;

    LastUseWriteBack(RedisClusterAsyncCommands<String, String> commands) {
        this.commands = commands;
    }

    /** The bindings used since the last write-back; on failure they stay due. */
    void touched(Collection<Pool> pools) throws StoreUnavailableException {
        Map<Pool, List<NearCache.Binding>> due = new HashMap<>();
        for (Pool p : pools) {
            due.put(p, p.cache.drainTouched());
        }
        try {
            write(due);
        } catch (StoreUnavailableException e) {
            due.forEach((p, used) -> used.forEach(b -> p.cache.touch(b, b.lastUsedMillis)));
            throw e;
        }
    }

    /** ZADD XX GT: a later use moves a session's last use forward; a session gone meanwhile is not added back. */
    void write(Map<Pool, List<NearCache.Binding>> due) throws StoreUnavailableException {
        List<Future<Long>> replies = new ArrayList<>();
        for (Map.Entry<Pool, List<NearCache.Binding>> e : due.entrySet()) {
            List<NearCache.Binding> bindings = e.getValue();
            for (int from = 0; from < bindings.size(); from += BATCH) {
                List<NearCache.Binding> chunk = bindings.subList(from, Math.min(bindings.size(), from + BATCH));
                @SuppressWarnings("unchecked")
                ScoredValue<String>[] values = new ScoredValue[chunk.size()];
                for (int i = 0; i < values.length; i++) {
                    values[i] = ScoredValue.just(chunk.get(i).lastUsedMillis, chunk.get(i).sessionId);
                }
                replies.add(commands.zadd(e.getKey().keys.idle(), ZAddArgs.Builder.xx().gt(), values));
            }
        }
        for (Future<Long> reply : replies) {
            StoreTimeouts.await(reply, StoreTimeouts.COMMAND);
        }
    }
}
