package org.vllmrouter.redis;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Future;
import org.vllmrouter.core.session.LeastLoaded;
import org.vllmrouter.core.session.LocalTrajectories;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.Trajectory;
import org.vllmrouter.core.worker.Worker;

/**
 * The sessions of one sticky policy instance (a scope) in a {@link RedisSessionStore}, shared with every replica:
 * the policy over the store's parts. A request of a cached, live session whose worker is a candidate is answered
 * from the pool's {@link NearCache} without a round trip; its last use reaches the store with the next
 * {@link LastUseWriteBack}, which is why a sweep drops a session only {@link #SWEEP_GRACE_MILLIS} after its TTL (a
 * revisit still decides on the exact last use this router knows, and the store's). Anything else (a new session,
 * one this router has not seen, an expired one, a worker that is no longer a candidate) is one server-side script
 * ({@link ScriptGateway}): look-up, choice among the candidates and reservation in one atomic step. While the store
 * does not answer, the {@link OutageJournal} decides; a binding it made is served only until the store answers
 * again, then its next turn offers it to the store, whose own binding of the session wins, so every replica sends
 * the session to the same worker.
 *
 * <p>Counts are per pool in the store (a pool's keys share one hash slot), so a new binding goes to the candidate
 * with the fewest sessions of its pool; {@link #leastLoaded} and the session counts of {@link #stats} add them up
 * per worker URL.
 *
 * <p>The store holds bindings only: each session's {@link Trajectory} as this router served it is kept in
 * {@link LocalTrajectories}, in this process.
 */
final class RedisSessionTable implements SessionTable {
    /** Last uses reach the store up to one sync interval late (plus a reply); a sweep waits for them. */
    static final long SWEEP_GRACE_MILLIS = 2 * StoreTimeouts.SYNC_INTERVAL.toMillis();

    private final StoreContext store;
    private final long ttlMillis;
    private final PoolDirectory pools;
    private final LastUseWriteBack writeBack;
    private final OutageJournal journal;
    private final LocalTrajectories trajectories;
    private volatile SessionStats lastStats = SessionStats.EMPTY;

    RedisSessionTable(StoreContext store, String scope, long ttlMillis, LocalTrajectories trajectories) {
        this.trajectories = trajectories;
        this.store = store;
        this.ttlMillis = ttlMillis;
        this.pools = new PoolDirectory(store, scope);
        this.writeBack = new LastUseWriteBack(store.commands());
        this.journal = new OutageJournal(store, scope, ttlMillis, pools, writeBack);
    }

    @Override
    public Assignment route(String poolName, String sessionId, List<Worker> candidates) {
        Assignment a = place(poolName, sessionId, candidates);
        if (a.outcome() != Outcome.EXISTING) {
            trajectories.routed(poolName, sessionId, a.outcome());
        }
        return a;
    }

    private Assignment place(String poolName, String sessionId, List<Worker> candidates) {
        Objects.requireNonNull(poolName, "pool");
        Objects.requireNonNull(sessionId, "sessionId");
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("route needs at least one candidate");
        }
        Pool pool = pools.pool(poolName);
        long now = store.nowMillis();
        StoreHealth health = store.health();
        NearCache.Binding cached = pool.cache.get(sessionId);
        Worker current = cached != null && now - cached.lastUsedMillis < ttlMillis
                ? find(candidates, cached.url) : null;
        if (current != null && !(cached.local && !health.offline())) {
            pool.cache.touch(cached, now);
            return new Assignment(current, Outcome.EXISTING, pool.countOf(cached.url));
        }
        journal.routed(sessionId);
        if (!health.offline()) {
            try {
                return current != null ? adoptInStore(pool, cached, candidates, now)
                        : routeInStore(pool, sessionId, candidates, now);
            } catch (StoreUnavailableException e) {
                health.markDegraded(e.getMessage());
            }
        }
        if (current != null && pool.cache.get(sessionId) == cached) {
            pool.cache.touch(cached, now);
            return new Assignment(current, Outcome.EXISTING, pool.countOf(cached.url));
        }
        return journal.routeLocally(pool, sessionId, candidates, now);
    }

    /**
     * A live binding this router made on its own, its worker still a candidate, once the store answers again: the
     * store adopts it unless it holds a binding of its own, which this turn then follows. A session released
     * elsewhere after the binding's last use, or whose stored worker is no longer a candidate, is routed anew.
     */
    private Assignment adoptInStore(Pool pool, NearCache.Binding local, List<Worker> candidates, long now)
            throws StoreUnavailableException {
        String url = journal.adopt(pool, local);
        Worker bound = url.isEmpty() ? null : find(candidates, url);
        if (bound == null) {
            return routeInStore(pool, local.sessionId, candidates, now);
        }
        NearCache.Binding adopted = pool.cache.get(local.sessionId);
        if (adopted != null) {
            pool.cache.touch(adopted, now);
        }
        return new Assignment(bound, url.equals(local.url) ? Outcome.EXISTING : Outcome.REBOUND, pool.countOf(url));
    }

    private Assignment routeInStore(Pool pool, String sessionId, List<Worker> candidates, long now)
            throws StoreUnavailableException {
        List<Worker> ranked = LeastLoaded.preferenceOrder(candidates, sessionId);
        journal.supersede(pool, sessionId);
        ScriptGateway.Routed reply = StoreTimeouts.await(store.scripts().route(pool.keys, sessionId, now, ttlMillis,
                ranked, r -> applyRoute(pool, sessionId, ranked, now, r)), StoreTimeouts.ROUTE);
        pool.checkEpoch(reply.epoch(), store.health());
        return new Assignment(find(ranked, reply.url()), reply.outcome(), reply.sessionsOnUrl());
    }

    /**
     * On the I/O thread: the store's answer becomes the cached binding, and its worker's count the known one (the
     * other counts are refreshed about once a second).
     */
    private static void applyRoute(Pool pool, String sessionId, List<Worker> ranked, long now,
                                   ScriptGateway.Routed reply) {
        // The candidate's own URL string: the cached path then finds the worker by identity.
        String url = find(ranked, reply.url()).url();
        pool.cache.put(reply.outcome() == Outcome.EXISTING ? new NearCache.Binding(sessionId, url, false, now)
                : NearCache.Binding.written(sessionId, url, now));
        pool.setCount(url, reply.sessionsOnUrl());
    }

    /** From the counts last seen (no round trip): requests without a session id are routed on them. */
    @Override
    public List<Worker> leastLoaded(List<Worker> candidates) {
        return LeastLoaded.fewest(candidates, url -> {
            int n = 0;
            for (Pool p : pools.used()) {
                n += p.countOf(url);
            }
            return n;
        });
    }

    @Override
    public int release(String sessionId) {
        long now = store.nowMillis();
        journal.releasedRecently(sessionId, now);
        int local = 0;
        for (Pool p : pools.used()) {
            trajectories.released(p.name, sessionId);
            NearCache.Binding cached = p.cache.remove(sessionId);
            boolean journaled = journal.forget(p, sessionId);
            if (cached != null) {
                p.uncount(cached.url);
            }
            if (cached != null || journaled) {
                local++;
            }
        }
        StoreHealth health = store.health();
        if (!health.offline()) {
            try {
                return store.scripts().release(pools.all(StoreTimeouts.ROUTE), sessionId, now, StoreTimeouts.ROUTE);
            } catch (StoreUnavailableException e) {
                health.markDegraded(e.getMessage());
            }
        }
        journal.releasedOffline(sessionId, now);
        return local;
    }

    @Override
    public int expireIdle(int maxEntries) {
        trajectories.expireIdle();
        long now = store.nowMillis();
        int n = journal.expire(now, maxEntries);
        if (n >= maxEntries || store.health().degraded()) {
            return n;
        }
        long cutoff = now - ttlMillis - SWEEP_GRACE_MILLIS;
        long releaseCutoff = now - OutageJournal.RELEASE_RECORD_MILLIS;
        try {
            for (Pool p : pools.all(StoreTimeouts.COMMAND)) {
                while (n < maxEntries) {
                    int batch = Math.min(ScriptGateway.BATCH, maxEntries - n);
                    int expired = StoreTimeouts.await(store.scripts().expire(p, cutoff, batch, releaseCutoff),
                            StoreTimeouts.COMMAND).size();
                    n += expired;
                    if (expired < batch) {
                        break;
                    }
                }
            }
        } catch (StoreUnavailableException e) {
            store.health().markDegraded(e.getMessage());
        }
        return n;
    }

    @Override
    public void turnEnded(String pool, String sessionId, long promptTokens, long cachedTokens) {
        trajectories.turnEnded(pool, sessionId, promptTokens, cachedTokens);
    }

    @Override
    public Trajectory trajectory(String sessionId) {
        Trajectory sum = null;
        for (Pool p : pools.used()) {
            NearCache.Binding cached = p.cache.get(sessionId);
            Trajectory t = trajectories.trajectory(p.name, sessionId, cached == null ? null : cached.url);
            if (t != null) {
                sum = sum == null ? t : sum.plus(t);
            }
        }
        return sum;
    }

    /** The store's counters (every replica's sessions); the last ones seen while the store does not answer. */
    @Override
    public SessionStats stats() {
        if (!store.health().degraded()) {
            try {
                refreshStats(StoreTimeouts.ROUTE);
            } catch (StoreUnavailableException e) {
                store.health().markDegraded(e.getMessage());
            }
        }
        return lastStats;
    }

    private void refreshStats(Duration timeout) throws StoreUnavailableException {
        Map<Pool, Future<ScriptGateway.PoolStats>> replies = new HashMap<>();
        for (Pool p : pools.all(timeout)) {
            replies.put(p, store.scripts().stats(p.keys));
        }
        Map<String, Integer> perWorker = new HashMap<>();
        long active = 0;
        long started = 0;
        long released = 0;
        long expired = 0;
        long rebound = 0;
        for (Map.Entry<Pool, Future<ScriptGateway.PoolStats>> e : replies.entrySet()) {
            Pool p = e.getKey();
            ScriptGateway.PoolStats s = StoreTimeouts.await(e.getValue(), timeout);
            active += s.sessions();
            s.perWorker().forEach((url, n) -> perWorker.merge(url, n, Integer::sum));
            p.refreshCounts(s.perWorker());
            started += s.started();
            released += s.released();
            expired += s.expired();
            rebound += s.rebound();
            p.checkEpoch(s.epoch(), store.health());
        }
        lastStats = new SessionStats(perWorker, active, started, released, expired, 0, rebound);
    }

    /**
     * The background thread's routine, about once a second while the store answers: last uses written back,
     * the journal handed back, the scope's pools registered, the counters refreshed.
     */
    void sync() throws StoreUnavailableException {
        writeBack.touched(pools.used());
        journal.handBack();
        pools.register();
        refreshStats(StoreTimeouts.COMMAND);
        journal.forgetOldReleases();
    }

    /** After the store failed, before routing uses it again: see {@link OutageJournal#reconcile}. */
    Runnable reconcile() throws StoreUnavailableException {
        return journal.reconcile();
    }

    /** The worker URL this router has cached for a session, or null (for tests of the cache's correctness). */
    String cachedWorker(String poolName, String sessionId) {
        Pool p = pools.used(poolName);
        NearCache.Binding b = p == null ? null : p.cache.get(sessionId);
        return b == null ? null : b.url;
    }

    private static Worker find(List<Worker> candidates, String url) {
        return Worker.byUrl(candidates, url);
    }
}
