package org.vllmrouter.redis;

import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The pools of one scope: those this router uses, created on first use, and those any replica registered in the
 * store (a release or a sweep covers them all).
 */
final class PoolDirectory {
    private final StoreContext store;
    private final String scope;
    private final String scopePoolsKey;
    private final ConcurrentHashMap<String, Pool> pools = new ConcurrentHashMap<>();

    PoolDirectory(StoreContext store, String scope) {
        this.store = store;
        this.scope = scope;
        this.scopePoolsKey = Keys.scopePools(scope);
    }

    /**
     * The pool, created on first use. A new pool is registered in the store before this router's first script for
     * it (same connection, so in order), so that a release on any replica finds it; the background sync registers
     * it again should that fail.
     */
    Pool pool(String name) {
        Pool p = pools.get(name);
        if (p != null) {
            return p;
        }
        Pool created = new Pool(scope, name);
        p = pools.putIfAbsent(name, created);
        if (p != null) {
            return p;
        }
        store.tracking().register(created);
        if (!store.health().degraded()) {
            store.commands().sadd(scopePoolsKey, name);
        }
        return created;
    }

    /** The pool if this router used it, else null. */
    Pool used(String name) {
        return pools.get(name);
    }

    /** The pools this router used. */
    Collection<Pool> used() {
        return pools.values();
    }

    /** Every pool of this scope: those any replica registered, and this router's own. */
    List<Pool> all(Duration timeout) throws StoreUnavailableException {
        Set<String> names = new HashSet<>(StoreTimeouts.await(store.commands().smembers(scopePoolsKey), timeout));
        names.addAll(pools.keySet());
        return names.stream().map(this::pool).toList();
    }

    /** Registers this router's pools again (the first registration may have failed). */
    void register() throws StoreUnavailableException {
        if (!pools.isEmpty()) {
            StoreTimeouts.await(store.commands().sadd(scopePoolsKey, pools.keySet().toArray(String[]::new)),
                    StoreTimeouts.COMMAND);
        }
    }
}
