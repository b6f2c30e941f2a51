package org.vllmrouter.redis;

import io.lettuce.core.RedisFuture;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The structure of one scope's sessions in the store, checked as the session-table contract suite checks every
 * table after each step: in each pool the idle index and the binding keys name the same sessions, each worker's
 * count is the number of sessions bound to it (never zero or less), and the table's near cache agrees with the
 * store on every session the store holds.
 */
final class RedisTableStructure {
    private RedisTableStructure() {
    }

    static void check(RedisSessionStore store, RedisSessionTable table, String scope) throws Exception {
        var commands = store.commands();
        for (String pool : await(commands.smembers(Keys.scopePools(scope)))) {
            Keys.Pool keys = Keys.pool(scope, pool);
            Map<String, String> boundTo = new HashMap<>();
            for (String key : await(commands.keys(glob(keys.bindingPrefix()) + "*"))) {
                boundTo.put(key.substring(keys.bindingPrefix().length()), await(commands.get(key)));
            }
            Set<String> idle = new HashSet<>(await(commands.zrange(keys.idle(), 0, -1)));
            require(idle.equals(boundTo.keySet()), "pool '" + pool + "': idle index " + idle + ", bindings "
                    + boundTo.keySet());
            Map<String, Integer> tally = new HashMap<>();
            boundTo.values().forEach(url -> tally.merge(url, 1, Integer::sum));
            Map<String, Integer> counts = new HashMap<>();
            await(commands.hgetall(keys.counts())).forEach((url, n) -> counts.put(url, Integer.parseInt(n)));
            require(counts.equals(tally), "pool '" + pool + "': counts " + counts + ", bindings per worker " + tally);
            boundTo.forEach((id, url) -> {
                String cached = table.cachedWorker(pool, id);
                require(cached == null || cached.equals(url), "pool '" + pool + "': '" + id + "' is cached on "
                        + cached + ", bound to " + url);
            });
        }
    }

    /** {@code s} as a KEYS pattern that matches only itself. */
    private static String glob(String s) {
        return s.replaceAll("([*?\\[\\]\\\\])", "\\\\$1");
    }

    private static <T> T await(RedisFuture<T> reply) throws Exception {
        return reply.get(5, TimeUnit.SECONDS);
    }

    private static void require(boolean holds, String otherwise) {
        if (!holds) {
            throw new AssertionError(otherwise);
        }
    }
}
