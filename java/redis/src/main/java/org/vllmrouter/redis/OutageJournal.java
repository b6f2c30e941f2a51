package org.vllmrouter.redis;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.logging.Logger;
import org.vllmrouter.core.session.LeastLoaded;
import org.vllmrouter.core.session.SessionTable.Assignment;
import org.vllmrouter.core.session.SessionTable.Outcome;
import org.vllmrouter.core.worker.Worker;

/**
 * What one table decides while the store does not answer, and how that goes back to the store when it answers
 * again. Meanwhile new bindings are chosen from this router's last known counts and journaled, and releases are
 * remembered. Afterwards the releases are replayed and the journal is offered to the store (adoption), where a
 * binding the store already holds wins, so no count goes negative or stays behind; a pool whose data the store
 * lost gets every live binding this router knows back, after this router's recent releases are replayed into it.
 */
final class OutageJournal {
    // The table's records, as they always were.
    private static final Logger LOG = Logger.getLogger(RedisSessionTable.class.getName());

    /** How long a release record keeps a router reconciling after an outage from adopting the session again. */
    static final long RELEASE_RECORD_MILLIS = 10 * 60_000L;
    private static final int RECENT_RELEASES = 100_000;

    private final StoreContext store;
    private final String scope;
    private final long ttlMillis;
    private final PoolDirectory pools;
    private final LastUseWriteBack writeBack;
    /** Per pool: bindings made while the store did not answer, not yet adopted by it. */
    private final ConcurrentHashMap<Pool, ConcurrentHashMap<String, NearCache.Binding>> journals =
            new ConcurrentHashMap<>();
    /** Sessions released while the store did not answer (id -> when); released there once it does. */
    private final ConcurrentHashMap<String, Long> pendingReleases = new ConcurrentHashMap<>();
    /**
     * Sessions this router released lately (id -> when): when the store loses a pool's data (release records
     * included), another router may still hold one of them (its invalidation was lost with the store) and put it
     * back; replaying these releases undoes or prevents that. At most {@link #RECENT_RELEASES} for
     * {@link #RELEASE_RECORD_MILLIS}.
     */
    private final ConcurrentHashMap<String, Long> recentReleases = new ConcurrentHashMap<>();

    OutageJournal(StoreContext store, String scope, long ttlMillis, PoolDirectory pools, LastUseWriteBack writeBack) {
        this.store = store;
        this.scope = scope;
        this.ttlMillis = ttlMillis;
        this.pools = pools;
        this.writeBack = writeBack;
    }

    private ConcurrentHashMap<String, NearCache.Binding> journal(Pool p) {
        return journals.computeIfAbsent(p, unused -> new ConcurrentHashMap<>());
    }

    /** The store did not answer: the least-loaded candidate by this router's last known counts, journaled. */
    Assignment routeLocally(Pool pool, String sessionId, List<Worker> candidates, long now) {
        Worker chosen = LeastLoaded.choose(candidates, pool::countOf, sessionId);
        NearCache.Binding b = new NearCache.Binding(sessionId, chosen.url(), true, now);
        NearCache.Binding replaced = pool.cache.put(b);
        journal(pool).put(sessionId, b);
        if (replaced != null) {
            pool.uncount(replaced.url);
        }
        int n = pool.count(chosen.url());
        return new Assignment(chosen, replaced == null ? Outcome.STARTED : Outcome.REBOUND, n);
    }

    /** The store decides the session's binding now: a binding journaled for it is dropped from the cache too. */
    void supersede(Pool pool, String sessionId) {
        NearCache.Binding journaled = journal(pool).remove(sessionId);
        if (journaled != null) {
            pool.cache.remove(journaled);
        }
    }

    /** A session routed again is no longer a recent release. */
    void routed(String sessionId) {
        recentReleases.remove(sessionId);
    }

    /** The session was released: its journaled binding in {@code pool}, if any, is dropped; returns whether one was. */
    boolean forget(Pool pool, String sessionId) {
        return journal(pool).remove(sessionId) != null;
    }

    /** Remembers a release for replaying into a pool the store may lose. */
    void releasedRecently(String sessionId, long now) {
        if (recentReleases.size() < RECENT_RELEASES) {
            recentReleases.put(sessionId, now);
        }
    }

    /** The store did not take the release: it is replayed once the store answers. */
    void releasedOffline(String sessionId, long now) {
        pendingReleases.put(sessionId, now);
    }

    /** Bindings this router made on its own and never got into the store, idle past the TTL. */
    int expire(long now, int maxEntries) {
        int n = 0;
        for (Map.Entry<Pool, ConcurrentHashMap<String, NearCache.Binding>> e : journals.entrySet()) {
            Pool p = e.getKey();
            for (NearCache.Binding b : e.getValue().values()) {
                if (n >= maxEntries) {
                    return n;
                }
                if (now - b.lastUsedMillis >= ttlMillis && e.getValue().remove(b.sessionId, b)) {
                    if (p.cache.remove(b)) {
                        p.uncount(b.url);
                    }
                    n++;
                }
            }
        }
        return n;
    }

    /**
     * A live binding this router made on its own, offered to the store by its session's next turn once the store
     * answers again; returns the URL the session is bound to now ("" when the store did not take it).
     */
    String adopt(Pool pool, NearCache.Binding local) throws StoreUnavailableException {
        List<NearCache.Binding> offered = List.of(local);
        ScriptGateway.Adopted reply = StoreTimeouts.await(store.scripts().adopt(pool.keys, store.nowMillis(),
                ttlMillis, offered, r -> applyAdopt(pool, offered, r.boundNow())), StoreTimeouts.ROUTE);
        pool.checkEpoch(reply.epoch(), store.health());
        return reply.boundNow().get(0);
    }

    /**
     * The background's step while the store answers: the releases replayed, then the journal adopted (after the
     * releases, so that a session released and started again while the store did not answer keeps its new binding).
     */
    void handBack() throws StoreUnavailableException {
        replayPendingReleases();
        for (Pool p : pools.used()) {
            adopt(p, new ArrayList<>(journal(p).values()));
        }
    }

    /** Release records older than the store keeps its own are no longer replayed. */
    void forgetOldReleases() {
        long forgetBefore = store.nowMillis() - RELEASE_RECORD_MILLIS;
        recentReleases.values().removeIf(at -> at < forgetBefore);
    }

    private void replayPendingReleases() throws StoreUnavailableException {
        if (pendingReleases.isEmpty()) {
            return;
        }
        List<Pool> all = pools.all(StoreTimeouts.COMMAND);
        for (Map.Entry<String, Long> release : new HashMap<>(pendingReleases).entrySet()) {
            store.scripts().release(all, release.getKey(), release.getValue(), StoreTimeouts.COMMAND);
            pendingReleases.remove(release.getKey(), release.getValue());
        }
    }

    /**
     * After the store failed, before routing uses it again. A pool whose data the store lost gets back every live
     * binding this router knows (and its recent releases replayed first). In the others, invalidations may have
     * been missed: cached bindings get their last uses written back, and the returned step, run once routing uses
     * the store again, takes them out of the cache (so that a turn meanwhile is served from the cache, not from a
     * binding made on this router's own). Releases made while the store did not answer are replayed; the journal
     * stays for {@link #handBack}, and until then each of its bindings is offered to the store by its session's next
     * turn.
     */
    Runnable reconcile() throws StoreUnavailableException {
        Map<Pool, Future<String>> epochs = new HashMap<>();
        for (Pool p : pools.used()) {
            epochs.put(p, store.commands().hget(p.keys.stats(), "epoch"));
        }
        long now = store.nowMillis();
        Map<Pool, List<NearCache.Binding>> intact = new HashMap<>();
        for (Map.Entry<Pool, Future<String>> e : epochs.entrySet()) {
            Pool p = e.getKey();
            List<NearCache.Binding> cached = p.cache.stored();
            String current = StoreTimeouts.await(e.getValue(), StoreTimeouts.COMMAND);
            String seen = p.epoch();
            if (seen != null && !seen.equals(current)) {
                List<NearCache.Binding> live = cached.stream().filter(b -> now - b.lastUsedMillis < ttlMillis).toList();
                LOG.warning("Session store " + store.description() + " lost the sessions of pool '" + p.name
                        + "' of " + scope + "; putting back the " + live.size() + " this router knows");
                p.forgetEpoch();
                for (Map.Entry<String, Long> release : recentReleases.entrySet()) {
                    store.scripts().release(List.of(p), release.getKey(), release.getValue(), StoreTimeouts.COMMAND);
                }
                adopt(p, live);
            } else {
                intact.put(p, cached);
            }
        }
        writeBack.write(intact);
        replayPendingReleases();
        return () -> intact.forEach((p, cached) -> cached.forEach(p.cache::remove));
    }

    /**
     * Offers {@code bindings} of this router to the store in batches; the store's answer for each (its own binding,
     * or none) replaces the cached one on the I/O thread.
     */
    private void adopt(Pool p, List<NearCache.Binding> bindings) throws StoreUnavailableException {
        for (int from = 0; from < bindings.size(); from += ScriptGateway.BATCH) {
            List<NearCache.Binding> chunk =
                    bindings.subList(from, Math.min(bindings.size(), from + ScriptGateway.BATCH));
            ScriptGateway.Adopted reply = StoreTimeouts.await(store.scripts().adopt(p.keys, store.nowMillis(),
                    ttlMillis, chunk, r -> applyAdopt(p, chunk, r.boundNow())), StoreTimeouts.COMMAND);
            p.checkEpoch(reply.epoch(), store.health());
        }
    }

    /** On the I/O thread: the store's binding replaces the offered one, unless the cache moved on meanwhile. */
    private void applyAdopt(Pool p, List<NearCache.Binding> offered, List<String> boundNow) {
        ConcurrentHashMap<String, NearCache.Binding> journal = journal(p);
        for (int i = 0; i < offered.size(); i++) {
            NearCache.Binding old = offered.get(i);
            String url = boundNow.get(i);
            journal.remove(old.sessionId, old);
            if (url.isEmpty()) {
                if (p.cache.remove(old)) {
                    p.uncount(old.url);
                }
            } else {
                p.cache.replace(old, NearCache.Binding.written(old.sessionId, url, old.lastUsedMillis));
            }
        }
    }
}
