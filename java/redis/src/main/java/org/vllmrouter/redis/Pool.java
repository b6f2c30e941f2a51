package org.vllmrouter.redis;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One pool of a scope (a sticky policy instance's sessions of one model): its keys, this router's near cache of it,
 * and the last known sessions per worker (the store's, plus this router's own decisions while the store did not
 * answer).
 */
final class Pool {
    final String scope;
    final String name;
    final Keys.Pool keys;
    final NearCache cache = new NearCache();
    private final ConcurrentHashMap<String, Integer> counts = new ConcurrentHashMap<>();
    /** The pool's epoch as last seen; a different one means the store lost the pool's data. */
    private volatile String epoch;

    Pool(String scope, String name) {
        this.scope = scope;
        this.name = name;
        this.keys = Keys.pool(scope, name);
    }

    int countOf(String url) {
        Integer n = counts.get(url);
        return n == null ? 0 : n;
    }

    /** The store says {@code url} holds {@code n} sessions of this pool. */
    void setCount(String url, int n) {
        counts.put(url, n);
    }

    /** One more session on {@code url}, decided by this router; returns the new count. */
    int count(String url) {
        return counts.merge(url, 1, Integer::sum);
    }

    void uncount(String url) {
        counts.computeIfPresent(url, (u, n) -> n > 1 ? n - 1 : null);
    }

    /** The store's counts of every worker that holds sessions; the others hold none. */
    void refreshCounts(Map<String, Integer> fresh) {
        counts.keySet().retainAll(fresh.keySet());
        counts.putAll(fresh);
    }

    /** A pool's epoch seen in a reply: the first one is remembered, a different one means the store lost the pool. */
    void checkEpoch(String seen, StoreHealth health) {
        String known = epoch;
        if (known == null) {
            epoch = seen;
        } else if (!known.equals(seen)) {
            health.markDegraded("it lost the sessions of pool '" + name + "' of " + scope);
        }
    }

    /** The epoch last seen, or null (never seen, or forgotten after the store lost the pool). */
    String epoch() {
        return epoch;
    }

    /** The store lost the pool: the next epoch seen is the new one. */
    void forgetEpoch() {
        epoch = null;
    }
}
