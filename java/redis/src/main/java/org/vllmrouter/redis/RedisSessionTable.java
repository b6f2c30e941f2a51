package org.vllmrouter.redis;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.ZAddArgs;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.function.Supplier;
import java.util.logging.Logger;
import org.vllmrouter.core.session.LeastLoaded;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.worker.Worker;

/**
 * The sessions of one sticky policy instance (a scope) in a {@link RedisSessionStore}, shared with every replica.
 *
 * <p>Each pool (the request's model) keeps a near cache of bindings. A request of a cached, live session whose
 * worker is a candidate is answered from it without a round trip: the cache is right because the server tells
 * this router of every change to a binding key it did not make itself, and this router applies its own scripts'
 * replies. Its last use is recorded in the cache and written back by the background thread about once a second,
 * which is why a sweep drops a session only {@link #SWEEP_GRACE_MILLIS} after its TTL (a revisit still decides
 * on the exact last use this router knows, and the store's). Anything else (a new session, one this router has
 * not seen, an expired one, a worker that is no longer a candidate) is one server-side script: look-up, choice
 * among the candidates and reservation in one atomic step. A binding this router made while the store did not
 * answer is served only until the store answers again; then its next turn offers it to the store, whose own
 * binding of the session wins, so every replica sends the session to the same worker.
 *
 * <p>Counts are per pool in the store (a pool's keys share one hash slot); {@link #leastLoaded} and the session
 * counts of {@link #stats} add them up per worker URL.
 */
final class RedisSessionTable implements SessionTable {
    private static final Logger LOG = Logger.getLogger(RedisSessionTable.class.getName());

    /** Sessions per script call when expiring or adopting, so that no call holds the server for long. */
    static final int BATCH = 256;
    /** Members per write-back command. */
    private static final int WRITE_BACK_BATCH = 512;
    /** Last uses reach the store up to one sync interval late (plus a reply); a sweep waits for them. */
    static final long SWEEP_GRACE_MILLIS = 2 * RedisSessionStore.SYNC_INTERVAL.toMillis();
    /** How long a release record keeps a router reconciling after an outage from adopting the session again. */
    private static final long RELEASE_RECORD_MILLIS = 10 * 60_000L;
    private static final int RECENT_RELEASES = 100_000;

    private final RedisSessionStore store;
    private final String scope;
    private final long ttlMillis;
    private final String scopePoolsKey;
    private final ConcurrentHashMap<String, Pool> pools = new ConcurrentHashMap<>();
    /** Sessions released while the store did not answer (id -> when); released there once it does. */
    private final ConcurrentHashMap<String, Long> pendingReleases = new ConcurrentHashMap<>();
    /**
     * Sessions this router released lately (id -> when): when the store loses a pool's data (release records
     * included), another router may still hold one of them (its invalidation was lost with the store) and put it
     * back; replaying these releases undoes or prevents that. At most {@link #RECENT_RELEASES} for
     * {@link #RELEASE_RECORD_MILLIS}.
     */
    private final ConcurrentHashMap<String, Long> recentReleases = new ConcurrentHashMap<>();
    private volatile SessionStats lastStats = SessionStats.EMPTY;

    /** One pool's keys and this router's view of it. */
    static final class Pool {
        final String name;
        final Keys.Pool keys;
        /** The near cache: session id -> binding. */
        final ConcurrentHashMap<String, Binding> bindings = new ConcurrentHashMap<>();
        /** Bindings made while the store did not answer, not yet adopted by it. */
        final ConcurrentHashMap<String, Binding> journal = new ConcurrentHashMap<>();
        /** Last known sessions per worker URL (the store's, plus this router's own decisions while degraded). */
        final ConcurrentHashMap<String, Integer> counts = new ConcurrentHashMap<>();
        /** Cached bindings used since their last use was last written back. */
        final ConcurrentLinkedQueue<Binding> touched = new ConcurrentLinkedQueue<>();
        /** The pool's epoch as last seen; a different one means the store lost the pool's data. */
        volatile String epoch;

        Pool(String name, Keys.Pool keys) {
            this.name = name;
            this.keys = keys;
        }

        /**
         * The server says the binding key changed. Redis (7.0) also says so for this router's own script writes,
         * NOLOOP notwithstanding, right after their reply and possibly merged with another router's later write;
         * so a binding this router wrote itself is read back once before it is trusted or dropped. A journal entry
         * waits for its adoption either way.
         */
        void invalidated(String sessionId, Supplier<RedisFuture<String>> readBack) {
            Binding b = bindings.get(sessionId);
            if (b == null || b.local) {
                return;
            }
            if (!b.ownWrite) {
                bindings.remove(sessionId, b);
                return;
            }
            b.ownWrite = false;
            // Unread (the connection failed): kept; reconciling after the failure checks every cached binding.
            readBack.get().thenAccept(url -> {
                if (!b.url.equals(url)) {
                    bindings.remove(sessionId, b);
                }
            });
        }

        /** This router released or expired the session in the store. */
        void forget(String sessionId) {
            Binding b = bindings.get(sessionId);
            if (b != null && !b.local) {
                bindings.remove(sessionId, b);
            }
        }

        void forgetAll() {
            bindings.values().removeIf(b -> !b.local);
        }

        int countOf(String url) {
            Integer n = counts.get(url);
            return n == null ? 0 : n;
        }

        private void uncount(String url) {
            counts.computeIfPresent(url, (u, n) -> n > 1 ? n - 1 : null);
        }

        String[] routeKeys(String sessionId) {
            return new String[] {keys.binding(sessionId), keys.idle(), keys.counts(), keys.stats()};
        }

        String[] releaseKeys(String sessionId) {
            return new String[] {keys.binding(sessionId), keys.idle(), keys.counts(), keys.stats(), keys.released()};
        }

        String[] poolKeys() {
            return new String[] {keys.idle(), keys.counts(), keys.stats(), keys.released()};
        }
    }

    /**
     * A cached binding; {@code local} when this router made it while the store did not answer, {@code ownWrite}
     * while the invalidation of this router's own write of it is still to come.
     */
    static final class Binding {
        final String sessionId;
        final String url;
        final boolean local;
        volatile long lastUsedMillis;
        volatile boolean touched;
        volatile boolean ownWrite;

        Binding(String sessionId, String url, boolean local, long lastUsedMillis) {
            this.sessionId = sessionId;
            this.url = url;
            this.local = local;
            this.lastUsedMillis = lastUsedMillis;
        }

        static Binding written(String sessionId, String url, long lastUsedMillis) {
            Binding b = new Binding(sessionId, url, false, lastUsedMillis);
            b.ownWrite = true;
            return b;
        }
    }

    RedisSessionTable(RedisSessionStore store, String scope, long ttlMillis) {
        this.store = store;
        this.scope = scope;
        this.ttlMillis = ttlMillis;
        this.scopePoolsKey = Keys.scopePools(scope);
    }

    @Override
    public Assignment route(String poolName, String sessionId, List<Worker> candidates) {
        Objects.requireNonNull(poolName, "pool");
        Objects.requireNonNull(sessionId, "sessionId");
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("route needs at least one candidate");
        }
        Pool pool = pool(poolName);
        long now = store.nowMillis();
        Binding cached = pool.bindings.get(sessionId);
        Worker current = cached != null && now - cached.lastUsedMillis < ttlMillis ? find(candidates, cached.url) : null;
        if (current != null && !(cached.local && !store.offline())) {
            touch(pool, cached, now);
            return new Assignment(current, Outcome.EXISTING, pool.countOf(cached.url));
        }
        recentReleases.remove(sessionId);
        if (!store.offline()) {
            try {
                return current != null ? adoptInStore(pool, cached, candidates, now)
                        : routeInStore(pool, sessionId, candidates, now);
            } catch (StoreUnavailableException e) {
                store.markDegraded(e.getMessage());
            }
        }
        if (current != null && pool.bindings.get(sessionId) == cached) {
            touch(pool, cached, now);
            return new Assignment(current, Outcome.EXISTING, pool.countOf(cached.url));
        }
        return routeLocally(pool, sessionId, candidates, now);
    }

    /**
     * A live binding this router made on its own, its worker still a candidate, once the store answers again: the
     * store adopts it unless it holds a binding of its own, which this turn then follows. A session released
     * elsewhere after the binding's last use, or whose stored worker is no longer a candidate, is routed anew.
     */
    private Assignment adoptInStore(Pool pool, Binding local, List<Worker> candidates, long now)
            throws StoreUnavailableException {
        List<Binding> offered = List.of(local);
        List<Object> reply = RedisSessionStore.await(store.scripts().run(store.scripts().adopt, pool.poolKeys(),
                adoptArgs(pool, offered), r -> applyAdopt(pool, offered, (List<?>) r.get(2))),
                RedisSessionStore.ROUTE_TIMEOUT);
        checkEpoch(pool, (String) reply.get(0));
        logDropped(reply.get(1));
        String url = (String) ((List<?>) reply.get(2)).get(0);
        Worker bound = url.isEmpty() ? null : find(candidates, url);
        if (bound == null) {
            return routeInStore(pool, local.sessionId, candidates, now);
        }
        Binding adopted = pool.bindings.get(local.sessionId);
        if (adopted != null) {
            touch(pool, adopted, now);
        }
        return new Assignment(bound, url.equals(local.url) ? Outcome.EXISTING : Outcome.REBOUND, pool.countOf(url));
    }

    private static void touch(Pool pool, Binding b, long now) {
        if (b.lastUsedMillis != now) {
            b.lastUsedMillis = now;
        }
        if (!b.touched) {
            b.touched = true;
            pool.touched.add(b);
        }
    }

    private Assignment routeInStore(Pool pool, String sessionId, List<Worker> candidates, long now)
            throws StoreUnavailableException {
        List<Worker> ranked = LeastLoaded.preferenceOrder(candidates, sessionId);
        String[] args = new String[4 + ranked.size()];
        args[0] = sessionId;
        args[1] = Long.toString(now);
        args[2] = Long.toString(ttlMillis);
        args[3] = store.newEpoch();
        for (int i = 0; i < ranked.size(); i++) {
            args[4 + i] = ranked.get(i).url();
        }
        Binding journaled = pool.journal.remove(sessionId);
        if (journaled != null) {
            pool.bindings.remove(sessionId, journaled);
        }
        List<Object> reply = RedisSessionStore.await(store.scripts().run(store.scripts().route,
                pool.routeKeys(sessionId), args, r -> applyRoute(pool, sessionId, ranked, now, r)),
                RedisSessionStore.ROUTE_TIMEOUT);
        Outcome outcome = switch ((String) reply.get(0)) {
            case "existing" -> Outcome.EXISTING;
            case "rebound" -> Outcome.REBOUND;
            default -> Outcome.STARTED;
        };
        checkEpoch(pool, (String) reply.get(3));
        logDropped(reply.get(4));
        return new Assignment(find(ranked, (String) reply.get(1)), outcome, ((Long) reply.get(2)).intValue());
    }

    /**
     * On the I/O thread: the store's answer becomes the cached binding, and its worker's count the known one (the
     * other counts are refreshed about once a second).
     */
    private static void applyRoute(Pool pool, String sessionId, List<Worker> ranked, long now, List<Object> reply) {
        // The candidate's own URL string: the cached path then finds the worker by identity.
        String url = find(ranked, (String) reply.get(1)).url();
        pool.bindings.put(sessionId, "existing".equals(reply.get(0))
                ? new Binding(sessionId, url, false, now) : Binding.written(sessionId, url, now));
        pool.counts.put(url, ((Long) reply.get(2)).intValue());
    }

    /** The store did not answer: the least-loaded candidate by this router's last known counts, journaled. */
    private Assignment routeLocally(Pool pool, String sessionId, List<Worker> candidates, long now) {
        Worker chosen = LeastLoaded.choose(candidates, pool::countOf, sessionId);
        Binding b = new Binding(sessionId, chosen.url(), true, now);
        Binding replaced = pool.bindings.put(sessionId, b);
        pool.journal.put(sessionId, b);
        if (replaced != null) {
            pool.uncount(replaced.url);
        }
        int n = pool.counts.merge(chosen.url(), 1, Integer::sum);
        return new Assignment(chosen, replaced == null ? Outcome.STARTED : Outcome.REBOUND, n);
    }

    /** From the counts last seen (no round trip): requests without a session id are routed on them. */
    @Override
    public List<Worker> leastLoaded(List<Worker> candidates) {
        return LeastLoaded.fewest(candidates, url -> {
            int n = 0;
            for (Pool p : pools.values()) {
                n += p.countOf(url);
            }
            return n;
        });
    }

    @Override
    public int release(String sessionId) {
        long now = store.nowMillis();
        if (recentReleases.size() < RECENT_RELEASES) {
            recentReleases.put(sessionId, now);
        }
        int local = 0;
        for (Pool p : pools.values()) {
            Binding cached = p.bindings.remove(sessionId);
            Binding journaled = p.journal.remove(sessionId);
            if (cached != null) {
                p.uncount(cached.url);
            }
            if (cached != null || journaled != null) {
                local++;
            }
        }
        if (!store.offline()) {
            try {
                return releaseInStore(sessionId, now, poolNames(RedisSessionStore.ROUTE_TIMEOUT),
                        RedisSessionStore.ROUTE_TIMEOUT);
            } catch (StoreUnavailableException e) {
                store.markDegraded(e.getMessage());
            }
        }
        pendingReleases.put(sessionId, now);
        return local;
    }

    private int releaseInStore(String sessionId, long releasedAt, Set<String> poolNames, Duration timeout)
            throws StoreUnavailableException {
        String[] args = {sessionId, Long.toString(releasedAt)};
        List<Future<List<Object>>> replies = new ArrayList<>();
        for (String name : poolNames) {
            Pool p = pool(name);
            replies.add(store.scripts().run(store.scripts().release, p.releaseKeys(sessionId), args,
                    r -> p.forget(sessionId)));
        }
        int released = 0;
        for (Future<List<Object>> reply : replies) {
            List<Object> r = RedisSessionStore.await(reply, timeout);
            released += ((Long) r.get(0)).intValue();
            logDropped(r.get(1));
        }
        return released;
    }

    @Override
    public int expireIdle(int maxEntries) {
        long now = store.nowMillis();
        int n = expireJournal(now, maxEntries);
        if (n >= maxEntries || store.degraded()) {
            return n;
        }
        String[] args = {Long.toString(now - ttlMillis - SWEEP_GRACE_MILLIS), null, null,
                Long.toString(now - RELEASE_RECORD_MILLIS)};
        try {
            for (String name : poolNames(RedisSessionStore.COMMAND_TIMEOUT)) {
                Pool p = pool(name);
                args[2] = p.keys.bindingPrefix();
                while (n < maxEntries) {
                    int batch = Math.min(BATCH, maxEntries - n);
                    args[1] = Integer.toString(batch);
                    List<Object> r = RedisSessionStore.await(store.scripts().run(store.scripts().expire,
                            p.poolKeys(), args, reply -> {
                                for (Object id : (List<?>) reply.get(0)) {
                                    p.forget((String) id);
                                }
                            }), RedisSessionStore.COMMAND_TIMEOUT);
                    int expired = ((List<?>) r.get(0)).size();
                    logDropped(r.get(1));
                    n += expired;
                    if (expired < batch) {
                        break;
                    }
                }
            }
        } catch (StoreUnavailableException e) {
            store.markDegraded(e.getMessage());
        }
        return n;
    }

    /** Bindings this router made on its own and never got into the store, idle past the TTL. */
    private int expireJournal(long now, int maxEntries) {
        int n = 0;
        for (Pool p : pools.values()) {
            for (Binding b : p.journal.values()) {
                if (n >= maxEntries) {
                    return n;
                }
                if (now - b.lastUsedMillis >= ttlMillis && p.journal.remove(b.sessionId, b)) {
                    if (p.bindings.remove(b.sessionId, b)) {
                        p.uncount(b.url);
                    }
                    n++;
                }
            }
        }
        return n;
    }

    /** The store's counters (every replica's sessions); the last ones seen while the store does not answer. */
    @Override
    public SessionStats stats() {
        if (!store.degraded()) {
            try {
                refreshStats(RedisSessionStore.ROUTE_TIMEOUT);
            } catch (StoreUnavailableException e) {
                store.markDegraded(e.getMessage());
            }
        }
        return lastStats;
    }

    private void refreshStats(Duration timeout) throws StoreUnavailableException {
        Map<Pool, Future<List<Object>>> replies = new HashMap<>();
        for (String name : poolNames(timeout)) {
            Pool p = pool(name);
            replies.put(p, store.scripts().run(store.scripts().stats,
                    new String[] {p.keys.idle(), p.keys.counts(), p.keys.stats()}, new String[0], null));
        }
        Map<String, Integer> perWorker = new HashMap<>();
        long active = 0;
        long[] lifetime = new long[4];
        for (Map.Entry<Pool, Future<List<Object>>> e : replies.entrySet()) {
            Pool p = e.getKey();
            List<Object> r = RedisSessionStore.await(e.getValue(), timeout);
            active += (Long) r.get(0);
            List<?> counts = (List<?>) r.get(1);
            Map<String, Integer> fresh = new HashMap<>();
            for (int i = 0; i + 1 < counts.size(); i += 2) {
                int n = Integer.parseInt((String) counts.get(i + 1));
                if (n > 0) {
                    fresh.put((String) counts.get(i), n);
                    perWorker.merge((String) counts.get(i), n, Integer::sum);
                }
            }
            p.counts.keySet().retainAll(fresh.keySet());
            p.counts.putAll(fresh);
            List<?> stats = (List<?>) r.get(2);
            for (int i = 0; i < lifetime.length; i++) {
                lifetime[i] += stats.get(i) == null ? 0 : Long.parseLong((String) stats.get(i));
            }
            checkEpoch(p, (String) stats.get(4));
            logDropped(r.get(3));
        }
        lastStats = new SessionStats(perWorker, active, lifetime[0], lifetime[1], lifetime[2], 0, lifetime[3]);
    }

    /**
     * The background thread's routine, about once a second while the store answers: last uses written back,
     * pending releases replayed, the journal adopted (after the releases, so that a session released and started
     * again while the store did not answer keeps its new binding), the scope's pools registered, the counters
     * refreshed.
     */
    void sync() throws StoreUnavailableException {
        writeBackTouched();
        replayPendingReleases();
        for (Pool p : pools.values()) {
            adopt(p, new ArrayList<>(p.journal.values()));
        }
        if (!pools.isEmpty()) {
            RedisSessionStore.await(store.commands().sadd(scopePoolsKey, pools.keySet().toArray(String[]::new)),
                    RedisSessionStore.COMMAND_TIMEOUT);
        }
        refreshStats(RedisSessionStore.COMMAND_TIMEOUT);
        long forgetBefore = store.nowMillis() - RELEASE_RECORD_MILLIS;
        recentReleases.values().removeIf(at -> at < forgetBefore);
    }

    private void replayPendingReleases() throws StoreUnavailableException {
        if (pendingReleases.isEmpty()) {
            return;
        }
        Set<String> names = poolNames(RedisSessionStore.COMMAND_TIMEOUT);
        for (Map.Entry<String, Long> release : new HashMap<>(pendingReleases).entrySet()) {
            releaseInStore(release.getKey(), release.getValue(), names, RedisSessionStore.COMMAND_TIMEOUT);
            pendingReleases.remove(release.getKey(), release.getValue());
        }
    }

    /**
     * After the store failed, before routing uses it again. A pool whose data the store lost gets back every live
     * binding this router knows (and its recent releases replayed first). In the others, invalidations may have
     * been missed: cached bindings get their last uses written back, and the returned step, run once routing uses
     * the store again, takes them out of the cache (so that a turn meanwhile is served from the cache, not from a
     * binding made on this router's own). Releases made while the store did not answer are replayed; the journal
     * stays for {@link #sync}, and until then each of its bindings is offered to the store by its session's next
     * turn.
     */
    Runnable reconcile() throws StoreUnavailableException {
        Map<Pool, Future<String>> epochs = new HashMap<>();
        for (Pool p : pools.values()) {
            epochs.put(p, store.commands().hget(p.keys.stats(), "epoch"));
        }
        long now = store.nowMillis();
        Map<Pool, List<Binding>> intact = new HashMap<>();
        for (Map.Entry<Pool, Future<String>> e : epochs.entrySet()) {
            Pool p = e.getKey();
            List<Binding> cached = p.bindings.values().stream().filter(b -> !b.local).toList();
            String current = RedisSessionStore.await(e.getValue(), RedisSessionStore.COMMAND_TIMEOUT);
            String seen = p.epoch;
            if (seen != null && !seen.equals(current)) {
                List<Binding> live = cached.stream().filter(b -> now - b.lastUsedMillis < ttlMillis).toList();
                LOG.warning("Session store " + store.description() + " lost the sessions of pool '" + p.name
                        + "' of " + scope + "; putting back the " + live.size() + " this router knows");
                p.epoch = null;
                for (Map.Entry<String, Long> release : recentReleases.entrySet()) {
                    releaseInStore(release.getKey(), release.getValue(), Set.of(p.name),
                            RedisSessionStore.COMMAND_TIMEOUT);
                }
                adopt(p, live);
            } else {
                intact.put(p, cached);
            }
        }
        writeBack(intact);
        replayPendingReleases();
        return () -> intact.forEach((p, cached) -> cached.forEach(b -> p.bindings.remove(b.sessionId, b)));
    }

    /** Writes back the last uses of the bindings used since the last write-back; on failure they stay due. */
    private void writeBackTouched() throws StoreUnavailableException {
        Map<Pool, List<Binding>> due = new HashMap<>();
        for (Pool p : pools.values()) {
            List<Binding> used = new ArrayList<>();
            for (Binding b; (b = p.touched.poll()) != null; ) {
                b.touched = false;
                if (!b.local && p.bindings.get(b.sessionId) == b) {
                    used.add(b);
                }
            }
            due.put(p, used);
        }
        try {
            writeBack(due);
        } catch (StoreUnavailableException e) {
            due.forEach((p, used) -> used.forEach(b -> touch(p, b, b.lastUsedMillis)));
            throw e;
        }
    }

    /** ZADD XX GT: a later use moves a session's last use forward; a session gone meanwhile is not added back. */
    private void writeBack(Map<Pool, List<Binding>> due) throws StoreUnavailableException {
        List<Future<Long>> replies = new ArrayList<>();
        for (Map.Entry<Pool, List<Binding>> e : due.entrySet()) {
            List<Binding> bindings = e.getValue();
            for (int from = 0; from < bindings.size(); from += WRITE_BACK_BATCH) {
                List<Binding> chunk = bindings.subList(from, Math.min(bindings.size(), from + WRITE_BACK_BATCH));
                @SuppressWarnings("unchecked")
                ScoredValue<String>[] values = new ScoredValue[chunk.size()];
                for (int i = 0; i < values.length; i++) {
                    values[i] = ScoredValue.just(chunk.get(i).lastUsedMillis, chunk.get(i).sessionId);
                }
                replies.add(store.commands().zadd(e.getKey().keys.idle(), ZAddArgs.Builder.xx().gt(), values));
            }
        }
        for (Future<Long> reply : replies) {
            RedisSessionStore.await(reply, RedisSessionStore.COMMAND_TIMEOUT);
        }
    }

    /**
     * Offers {@code bindings} of this router to the store in batches; the store's answer for each (its own binding,
     * or none) replaces the cached one on the I/O thread.
     */
    private void adopt(Pool p, List<Binding> bindings) throws StoreUnavailableException {
        for (int from = 0; from < bindings.size(); from += BATCH) {
            List<Binding> chunk = bindings.subList(from, Math.min(bindings.size(), from + BATCH));
            List<Object> reply = RedisSessionStore.await(store.scripts().run(store.scripts().adopt, p.poolKeys(),
                    adoptArgs(p, chunk), r -> applyAdopt(p, chunk, (List<?>) r.get(2))),
                    RedisSessionStore.COMMAND_TIMEOUT);
            checkEpoch(p, (String) reply.get(0));
            logDropped(reply.get(1));
        }
    }

    private String[] adoptArgs(Pool p, List<Binding> offered) {
        String[] args = new String[4 + 3 * offered.size()];
        args[0] = Long.toString(store.nowMillis());
        args[1] = Long.toString(ttlMillis);
        args[2] = p.keys.bindingPrefix();
        args[3] = store.newEpoch();
        for (int i = 0; i < offered.size(); i++) {
            Binding b = offered.get(i);
            args[4 + 3 * i] = b.sessionId;
            args[5 + 3 * i] = b.url;
            args[6 + 3 * i] = Long.toString(b.lastUsedMillis);
        }
        return args;
    }

    /** On the I/O thread: the store's binding replaces the offered one, unless the cache moved on meanwhile. */
    private static void applyAdopt(Pool p, List<Binding> offered, List<?> boundNow) {
        for (int i = 0; i < offered.size(); i++) {
            Binding old = offered.get(i);
            String url = (String) boundNow.get(i);
            p.journal.remove(old.sessionId, old);
            if (url.isEmpty()) {
                if (p.bindings.remove(old.sessionId, old)) {
                    p.uncount(old.url);
                }
            } else {
                p.bindings.replace(old.sessionId, old, Binding.written(old.sessionId, url, old.lastUsedMillis));
            }
        }
    }

    /** A pool's epoch seen in a reply: the first one is remembered, a different one means the store lost the pool. */
    private void checkEpoch(Pool pool, String epoch) {
        String seen = pool.epoch;
        if (seen == null) {
            pool.epoch = epoch;
        } else if (!seen.equals(epoch)) {
            store.markDegraded("it lost the sessions of pool '" + pool.name + "' of " + scope);
        }
    }

    private void logDropped(Object dropped) {
        if (dropped instanceof List<?> keys && !keys.isEmpty()) {
            LOG.warning("Session store " + store.description() + ": dropped keys of the wrong type, treated as absent: "
                    + keys);
        }
    }

    /**
     * The pool, created on first use. A new pool is registered in the store before this router's first script for
     * it (same connection, so in order), so that a release on any replica finds it; the background sync registers
     * it again should that fail.
     */
    private Pool pool(String name) {
        Pool p = pools.get(name);
        if (p != null) {
            return p;
        }
        Pool created = new Pool(name, Keys.pool(scope, name));
        p = pools.putIfAbsent(name, created);
        if (p != null) {
            return p;
        }
        store.register(created);
        if (!store.degraded()) {
            store.commands().sadd(scopePoolsKey, name);
        }
        return created;
    }

    /** The pools of this scope: those any replica registered, and this router's own. */
    private Set<String> poolNames(Duration timeout) throws StoreUnavailableException {
        Set<String> names = new HashSet<>(RedisSessionStore.await(
                store.commands().smembers(scopePoolsKey), timeout));
        names.addAll(pools.keySet());
        return names;
    }

    /** The worker URL this router has cached for a session, or null (for tests of the cache's correctness). */
    String cachedWorker(String poolName, String sessionId) {
        Pool p = pools.get(poolName);
        Binding b = p == null ? null : p.bindings.get(sessionId);
        return b == null ? null : b.url;
    }

    private static Worker find(List<Worker> candidates, String url) {
        return Worker.byUrl(candidates, url);
    }
}
