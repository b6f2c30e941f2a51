package org.vllmrouter.core.session;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.ToIntFunction;
import java.util.function.ToLongFunction;
import org.vllmrouter.core.worker.Worker;

/**
 * {@link SessionTable} in process memory, guarded by one lock held only for constant work per call
 * (apart from the per-candidate scan of a new binding).
 *
 * <p>Sessions sit in a list ordered by the time they were last queued, oldest first. A request of a
 * session only records its time; it moves the session to the end of the list just when it was queued
 * at least a granularity G ago (G = min(TTL/16, 60 s)), so most requests write no references (no
 * neighbour cache misses, no GC write barriers). Expiry looks only at the head: it stops as soon as
 * the head is not due, or is due but was used since it was queued (then every session behind it
 * expires at most G late, as upstream's 60 s sweep). It never walks idle sessions, so {@link #route}
 * drains a few expired ones per call. Whether a revisited session has expired is always decided on
 * its exact last use.
 *
 * <p>The table holds at most {@code maxSessions} bindings, whatever ids clients send. When it is full, a new
 * binding evicts the least recently used one: the head of the list, except that a head used again since it
 * was queued, within the last G, is given a second chance (moved to the end) instead, a bounded number of times per eviction, so a
 * session in active use survives a flood of one-off ids that turns the table over faster than G. (Such a
 * session may then expire up to 2G late.) An evicted session is released like a finished one (its
 * worker's count drops); if it comes back it starts anew.
 *
 * <p>Each binding carries its session's {@link Trajectory} (token sums, turns, re-binds), handed to the
 * {@link TrajectoryEnds} when the binding is released, expires or is evicted.
 */
public final class InMemorySessionTable implements SessionTable {
    /** Expired sessions dropped per {@link #route} call: more than one, so a backlog shrinks under load. */
    static final int EXPIRY_BATCH_PER_ROUTE = 4;

    /** Upstream sweeps once a minute; expired sessions are never dropped later than this. */
    static final Duration MAX_REQUEUE_GRANULARITY = Duration.ofSeconds(60);

    /** Bindings kept when no bound is given: about a few hundred MB of heap at most. */
    public static final int DEFAULT_MAX_SESSIONS = 1_000_000;

    /** Heads requeued per eviction at most before the head is evicted whatever its last use. */
    static final int MAX_SECOND_CHANCES = 8;

    private final long ttlNanos;
    private final long requeueGranularityNanos;
    private final int maxSessions;
    private final LongSupplier nanoClock;
    private final TrajectoryEnds ends;
    private final ReentrantLock lock = new ReentrantLock();
    /** Made once, so that no route allocates them; they read the table under its lock. */
    private final ToIntFunction<String> countOfUrl = this::countOf;
    private final ToLongFunction<String> tokensOfUrl = this::tokensOf;
    private final TokensWithout tokensWithout = new TokensWithout();

    /** Session id -> its binding in one pool; bindings of the same id in other pools chain off it. */
    private final HashMap<String, Binding> byId = new HashMap<>();
    /** Worker URL -> its sessions; removed when it reaches zero. */
    private final HashMap<String, WorkerSessions> byWorker = new HashMap<>();
    /** Queue order: oldest queue time first. */
    private Binding oldest;
    private Binding newest;
    private long active;
    private long started;
    private long released;
    private long expired;
    private long evicted;
    private long rebound;

    private static final class Binding {
        final String sessionId;
        final String pool;
        WorkerSessions worker;
        /** The weight a placing policy gave it (its last prompt's tokens); 0 under sticky_least_loaded. */
        long tokens;
        long lastUsedNanos;
        long queuedNanos;
        Binding older;
        Binding newer;
        Binding otherPool;
        long promptTokens;
        long cachedTokens = Trajectory.NOT_REPORTED;
        int turns;
        int workerChanges;

        Binding(String sessionId, String pool) {
            this.sessionId = sessionId;
            this.pool = pool;
        }
    }

    private static final class WorkerSessions {
        final String url;
        int count;
        long tokens;
        /**
         * Where {@link #find} last found this worker among the candidates: a pool's candidate list keeps its order
         * between worker changes, so a known turn looks at one candidate instead of scanning them.
         */
        int candidateIndex;

        WorkerSessions(String url) {
            this.url = url;
        }
    }

    /** At most {@value #DEFAULT_MAX_SESSIONS} sessions. */
    public InMemorySessionTable(Duration ttl, LongSupplier nanoClock) {
        this(ttl, DEFAULT_MAX_SESSIONS, nanoClock);
    }

    public InMemorySessionTable(Duration ttl, int maxSessions, LongSupplier nanoClock) {
        this(ttl, maxSessions, nanoClock, TrajectoryEnds.NONE);
    }

    /** {@code ends} hears each session's trajectory when the session ends. */
    public InMemorySessionTable(Duration ttl, int maxSessions, LongSupplier nanoClock, TrajectoryEnds ends) {
        this(ttl, maxSessions, nanoClock, min(ttl.dividedBy(16), MAX_REQUEUE_GRANULARITY), ends);
    }

    /** With an explicit requeue granularity G (0: exact least-recently-used order, expiry never late). */
    InMemorySessionTable(Duration ttl, int maxSessions, LongSupplier nanoClock, Duration requeueGranularity) {
        this(ttl, maxSessions, nanoClock, requeueGranularity, TrajectoryEnds.NONE);
    }

    private InMemorySessionTable(Duration ttl, int maxSessions, LongSupplier nanoClock, Duration requeueGranularity,
                                 TrajectoryEnds ends) {
        if (ttl.isNegative() || requeueGranularity.isNegative()) {
            throw new IllegalArgumentException("session TTL and requeue granularity must be >= 0, got "
                    + ttl + " and " + requeueGranularity);
        }
        if (maxSessions < 1) {
            throw new IllegalArgumentException("max sessions must be > 0, got " + maxSessions);
        }
        this.ttlNanos = saturatedNanos(ttl);
        this.requeueGranularityNanos = saturatedNanos(requeueGranularity);
        this.maxSessions = maxSessions;
        this.nanoClock = nanoClock;
        this.ends = ends;
    }

    public Duration ttl() {
        return Duration.ofNanos(ttlNanos);
    }

    @Override
    public Assignment route(String pool, String sessionId, List<Worker> candidates) {
        return route(pool, sessionId, candidates, null, 0);
    }

    /** {@code placement} null: the fewest sessions ({@link LeastLoaded#choose}), as {@link #route(String, String, List)}. */
    @Override
    public Assignment route(String pool, String sessionId, List<Worker> candidates, Placement placement,
                            long tokens) {
        Objects.requireNonNull(pool, "pool");
        Objects.requireNonNull(sessionId, "sessionId");
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("route needs at least one candidate");
        }
        lock.lock();
        try {
            // Read under the lock so queue times never go backwards.
            long now = nanoClock.getAsLong();
            expireLocked(now, EXPIRY_BATCH_PER_ROUTE);
            Binding first = byId.get(sessionId);
            Binding b = first;
            while (b != null && !b.pool.equals(pool)) {
                b = b.otherPool;
            }
            Outcome outcome;
            if (b != null) {
                if (now - b.lastUsedNanos < ttlNanos) {
                    Worker current = find(candidates, b.worker);
                    if (current != null && (placement == null || keeps(placement, b, current, candidates, tokens))) {
                        b.worker.tokens += tokens - b.tokens;
                        b.tokens = tokens;
                        b.lastUsedNanos = now;
                        if (now - b.queuedNanos >= requeueGranularityNanos) {
                            requeue(b, now);
                        }
                        return new Assignment(current, Outcome.EXISTING, b.worker.count);
                    }
                }
                unbindWorker(b);
                outcome = Outcome.REBOUND;
                rebound++;
                b.workerChanges++;
            } else {
                if (active >= maxSessions) {
                    evictLocked(now);
                    // The evicted binding may have been this id's in another pool.
                    first = byId.get(sessionId);
                }
                b = new Binding(sessionId, pool);
                if (first == null) {
                    byId.put(sessionId, b);
                } else {
                    b.otherPool = first.otherPool;
                    first.otherPool = b;
                }
                linkNewest(b, now);
                outcome = Outcome.STARTED;
                started++;
                active++;
            }
            Worker chosen = placement == null ? LeastLoaded.choose(candidates, countOfUrl, sessionId)
                    : placement.place(candidates, sessionId, tokens, tokensOfUrl);
            WorkerSessions ws = byWorker.computeIfAbsent(chosen.url(), WorkerSessions::new);
            ws.count++;
            ws.tokens += tokens;
            b.tokens = tokens;
            b.worker = ws;
            b.lastUsedNanos = now;
            requeue(b, now);
            return new Assignment(chosen, outcome, ws.count);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean placesByPolicy() {
        return true;
    }

    /** Per worker URL, the tokens its bound sessions carry (their weights); workers without sessions are absent. */
    public Map<String, Long> boundTokens() {
        lock.lock();
        try {
            Map<String, Long> perWorker = new HashMap<>();
            byWorker.forEach((url, ws) -> perWorker.put(url, ws.tokens));
            return perWorker;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public List<Worker> leastLoaded(List<Worker> candidates) {
        lock.lock();
        try {
            return LeastLoaded.fewest(candidates, countOfUrl);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int release(String sessionId) {
        lock.lock();
        try {
            Binding b = byId.remove(sessionId);
            int n = 0;
            for (; b != null; b = b.otherPool) {
                end(b);
                unbindWorker(b);
                unlink(b);
                n++;
            }
            active -= n;
            released += n;
            return n;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int expireIdle(int maxEntries) {
        lock.lock();
        try {
            return expireLocked(nanoClock.getAsLong(), maxEntries);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public SessionStats stats() {
        lock.lock();
        try {
            Map<String, Integer> perWorker = new HashMap<>();
            byWorker.forEach((url, ws) -> perWorker.put(url, ws.count));
            return new SessionStats(perWorker, active, started, released, expired, evicted, rebound);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void turnEnded(String pool, String sessionId, long promptTokens, long cachedTokens) {
        lock.lock();
        try {
            Binding b = byId.get(sessionId);
            while (b != null && !b.pool.equals(pool)) {
                b = b.otherPool;
            }
            if (b != null) {
                b.turns++;
                b.promptTokens += Math.max(0, promptTokens);
                b.cachedTokens = Trajectory.add(b.cachedTokens, cachedTokens);
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public LongSupplier clock() {
        return nanoClock;
    }

    @Override
    public Trajectory trajectory(String sessionId) {
        lock.lock();
        try {
            Trajectory sum = null;
            for (Binding b = byId.get(sessionId); b != null; b = b.otherPool) {
                Trajectory t = trajectoryOf(b);
                sum = sum == null ? t : sum.plus(t);
            }
            return sum;
        } finally {
            lock.unlock();
        }
    }

    /** Hands a binding's trajectory on as its session ends (before its worker is unbound). */
    private void end(Binding b) {
        if (ends != TrajectoryEnds.NONE) {
            ends.ended(trajectoryOf(b));
        }
    }

    private static Trajectory trajectoryOf(Binding b) {
        return new Trajectory(b.worker == null ? List.of() : List.of(b.worker.url), b.promptTokens, b.cachedTokens,
                b.turns, b.workerChanges);
    }

    /**
     * Checks the table's structure (for tests, after every step, as Caffeine validates its caches): the queue's
     * links agree both ways and its queue times never go backwards, every queued binding is indexed by its id
     * (one per pool) and nothing else is, and each worker's count is the number of its bindings, never zero, and its
     * tokens the sum of theirs.
     */
    void checkStructure() {
        lock.lock();
        try {
            Map<WorkerSessions, Integer> perWorker = new HashMap<>();
            Map<WorkerSessions, Long> tokensPerWorker = new HashMap<>();
            long queued = 0;
            Binding older = null;
            for (Binding b = oldest; b != null; older = b, b = b.newer) {
                require(b.older == older, "queue links disagree at " + b.sessionId);
                require(older == null || older.queuedNanos <= b.queuedNanos,
                        "queue times go backwards at " + b.sessionId);
                require(b.worker != null && byWorker.get(b.worker.url) == b.worker,
                        "unknown worker of " + b.sessionId);
                boolean indexed = false;
                for (Binding other = byId.get(b.sessionId); other != null; other = other.otherPool) {
                    indexed |= other == b;
                    require(other == b || !other.pool.equals(b.pool),
                            "two bindings of " + b.sessionId + " in one pool");
                }
                require(indexed, b.sessionId + " is queued but not indexed");
                perWorker.merge(b.worker, 1, Integer::sum);
                tokensPerWorker.merge(b.worker, b.tokens, Long::sum);
                queued++;
            }
            require(older == newest, "the queue's tail is not its newest binding");
            long indexed = 0;
            for (Map.Entry<String, Binding> e : byId.entrySet()) {
                for (Binding b = e.getValue(); b != null; b = b.otherPool) {
                    require(b.sessionId.equals(e.getKey()),
                            "binding of " + b.sessionId + " indexed as " + e.getKey());
                    indexed++;
                }
            }
            require(indexed == queued, indexed + " bindings indexed, " + queued + " queued");
            require(active == queued, "active " + active + ", queued " + queued);
            for (WorkerSessions ws : byWorker.values()) {
                require(ws.count > 0 && ws.count == perWorker.getOrDefault(ws, 0),
                        ws.url + " counts " + ws.count + " sessions, holds " + perWorker.getOrDefault(ws, 0));
                require(ws.tokens == tokensPerWorker.getOrDefault(ws, 0L),
                        ws.url + " counts " + ws.tokens + " tokens, holds " + tokensPerWorker.getOrDefault(ws, 0L));
            }
        } finally {
            lock.unlock();
        }
    }

    private static void require(boolean holds, String otherwise) {
        if (!holds) {
            throw new IllegalStateException(otherwise);
        }
    }

    private int expireLocked(long now, int maxEntries) {
        int n = 0;
        // The head has the oldest queue time and no session was used before it was queued, so when the
        // head is live every session behind it is live or expired for less than the granularity.
        while (n < maxEntries && oldest != null && now - oldest.lastUsedNanos >= ttlNanos) {
            Binding b = oldest;
            end(b);
            unbindWorker(b);
            unlink(b);
            removeFromIndex(b);
            n++;
        }
        active -= n;
        expired += n;
        return n;
    }

    /** Makes room for one binding: drops the least recently used one (see the class comment). */
    private void evictLocked(long now) {
        for (int chances = 0; chances < MAX_SECOND_CHANCES && oldest != newest && usedSinceQueued(oldest)
                && now - oldest.lastUsedNanos < requeueGranularityNanos; chances++) {
            requeue(oldest, now);
        }
        Binding b = oldest;
        end(b);
        unbindWorker(b);
        unlink(b);
        removeFromIndex(b);
        active--;
        evicted++;
    }

    private static boolean usedSinceQueued(Binding b) {
        return b.lastUsedNanos > b.queuedNanos;
    }

    /** Asks {@code placement} whether {@code b} stays on {@code current}, its own weight left out of the sums. */
    private boolean keeps(Placement placement, Binding b, Worker current, List<Worker> candidates, long tokens) {
        tokensWithout.binding = b;
        try {
            return placement.keeps(current, candidates, b.sessionId, tokens, tokensWithout);
        } finally {
            tokensWithout.binding = null;
        }
    }

    /**
     * Each worker's bound tokens without one binding's weight: one instance, pointed at the binding {@link #keeps}
     * asks about, which the table's lock lets only one route do at a time.
     */
    private final class TokensWithout implements ToLongFunction<String> {
        Binding binding;

        @Override
        public long applyAsLong(String url) {
            Binding b = binding;
            return tokensOf(url) - (url.equals(b.worker.url) ? b.tokens : 0);
        }
    }

    private long tokensOf(String url) {
        WorkerSessions ws = byWorker.get(url);
        return ws == null ? 0 : ws.tokens;
    }

    private int countOf(String url) {
        WorkerSessions ws = byWorker.get(url);
        return ws == null ? 0 : ws.count;
    }

    /**
     * The first candidate with {@code ws}'s URL, or null, as {@link Worker#byUrl}; looks where it was found last
     * before scanning (URLs are unique among candidates).
     */
    private static Worker find(List<Worker> candidates, WorkerSessions ws) {
        int at = ws.candidateIndex;
        if (at < candidates.size() && hasUrl(candidates.get(at), ws.url)) {
            return candidates.get(at);
        }
        for (int i = 0, n = candidates.size(); i < n; i++) {
            Worker w = candidates.get(i);
            if (hasUrl(w, ws.url)) {
                ws.candidateIndex = i;
                return w;
            }
        }
        return null;
    }

    private static boolean hasUrl(Worker w, String url) {
        String u = w.url();
        return u == url || (u.hashCode() == url.hashCode() && u.equals(url));
    }

    private void unbindWorker(Binding b) {
        WorkerSessions ws = b.worker;
        b.worker = null;
        if (ws != null) {
            ws.tokens -= b.tokens;
            if (--ws.count == 0) {
                byWorker.remove(ws.url);
            }
        }
        b.tokens = 0;
    }

    private void removeFromIndex(Binding b) {
        Binding first = byId.get(b.sessionId);
        if (first == b) {
            if (b.otherPool == null) {
                byId.remove(b.sessionId);
            } else {
                byId.put(b.sessionId, b.otherPool);
            }
            return;
        }
        for (Binding prev = first; prev != null; prev = prev.otherPool) {
            if (prev.otherPool == b) {
                prev.otherPool = b.otherPool;
                return;
            }
        }
    }

    private void linkNewest(Binding b, long now) {
        b.queuedNanos = now;
        b.older = newest;
        b.newer = null;
        if (newest != null) {
            newest.newer = b;
        } else {
            oldest = b;
        }
        newest = b;
    }

    private void requeue(Binding b, long now) {
        if (b == newest) {
            b.queuedNanos = now;
        } else {
            unlink(b);
            linkNewest(b, now);
        }
    }

    private void unlink(Binding b) {
        if (b.older != null) {
            b.older.newer = b.newer;
        } else {
            oldest = b.newer;
        }
        if (b.newer != null) {
            b.newer.older = b.older;
        } else {
            newest = b.older;
        }
        b.older = null;
        b.newer = null;
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
    }
}
