package org.vllmrouter.core.session;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.vllmrouter.core.hash.Rendezvous;
import org.vllmrouter.core.worker.Worker;

/**
 * {@link SessionTable} in process memory, guarded by one lock held only for constant work per call
 * (apart from the per-candidate scan of a new binding).
 *
 * <p>Sessions sit in a list ordered by last use, least recent first. Since every session has the same
 * TTL, that is also expiry order: expiry looks only at the head and stops at the first live session,
 * so it never walks idle sessions and {@link #route} can afford to drain a few expired ones per call.
 */
public final class InMemorySessionTable implements SessionTable {
    /** Expired sessions dropped per {@link #route} call: more than one, so a backlog shrinks under load. */
    static final int EXPIRY_BATCH_PER_ROUTE = 4;

    private final long ttlNanos;
    private final LongSupplier nanoClock;
    private final ReentrantLock lock = new ReentrantLock();

    /** Session id -> its binding in one pool; bindings of the same id in other pools chain off it. */
    private final HashMap<String, Binding> byId = new HashMap<>();
    /** Worker URL -> its sessions; removed when it reaches zero. */
    private final HashMap<String, WorkerSessions> byWorker = new HashMap<>();
    private Binding leastRecent;
    private Binding mostRecent;
    private long active;
    private long started;
    private long released;
    private long expired;
    private long rebound;

    private static final class Binding {
        final String sessionId;
        final String pool;
        WorkerSessions worker;
        long lastUsedNanos;
        Binding older;
        Binding newer;
        Binding otherPool;

        Binding(String sessionId, String pool) {
            this.sessionId = sessionId;
            this.pool = pool;
        }
    }

    private static final class WorkerSessions {
        final String url;
        int count;

        WorkerSessions(String url) {
            this.url = url;
        }
    }

    public InMemorySessionTable(Duration ttl, LongSupplier nanoClock) {
        if (ttl.isNegative()) {
            throw new IllegalArgumentException("session TTL must be >= 0, got " + ttl);
        }
        this.ttlNanos = saturatedNanos(ttl);
        this.nanoClock = nanoClock;
    }

    public Duration ttl() {
        return Duration.ofNanos(ttlNanos);
    }

    @Override
    public Assignment route(String pool, String sessionId, List<Worker> candidates) {
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("route needs at least one candidate");
        }
        long now = nanoClock.getAsLong();
        lock.lock();
        try {
            expireLocked(now, EXPIRY_BATCH_PER_ROUTE);
            Binding first = byId.get(sessionId);
            Binding b = first;
            while (b != null && !b.pool.equals(pool)) {
                b = b.otherPool;
            }
            Outcome outcome;
            if (b != null) {
                if (now - b.lastUsedNanos < ttlNanos) {
                    Worker current = find(candidates, b.worker.url);
                    if (current != null) {
                        b.lastUsedNanos = now;
                        moveToMostRecent(b);
                        return new Assignment(current, Outcome.EXISTING, b.worker.count);
                    }
                }
                unbindWorker(b);
                outcome = Outcome.REBOUND;
                rebound++;
            } else {
                b = new Binding(sessionId, pool);
                if (first == null) {
                    byId.put(sessionId, b);
                } else {
                    b.otherPool = first.otherPool;
                    first.otherPool = b;
                }
                linkMostRecent(b);
                outcome = Outcome.STARTED;
                started++;
                active++;
            }
            Worker chosen = leastLoadedLocked(candidates, sessionId);
            WorkerSessions ws = byWorker.computeIfAbsent(chosen.url(), WorkerSessions::new);
            ws.count++;
            b.worker = ws;
            b.lastUsedNanos = now;
            moveToMostRecent(b);
            return new Assignment(chosen, outcome, ws.count);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public List<Worker> leastLoaded(List<Worker> candidates) {
        List<Worker> least = new ArrayList<>(candidates.size());
        lock.lock();
        try {
            int min = Integer.MAX_VALUE;
            for (Worker w : candidates) {
                int n = countOf(w.url());
                if (n < min) {
                    min = n;
                    least.clear();
                }
                if (n == min) {
                    least.add(w);
                }
            }
        } finally {
            lock.unlock();
        }
        return least;
    }

    @Override
    public int release(String sessionId) {
        lock.lock();
        try {
            Binding b = byId.remove(sessionId);
            int n = 0;
            for (; b != null; b = b.otherPool) {
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
        long now = nanoClock.getAsLong();
        lock.lock();
        try {
            return expireLocked(now, maxEntries);
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
            return new SessionStats(perWorker, active, started, released, expired, rebound);
        } finally {
            lock.unlock();
        }
    }

    private int expireLocked(long now, int maxEntries) {
        int n = 0;
        while (n < maxEntries && leastRecent != null && now - leastRecent.lastUsedNanos >= ttlNanos) {
            Binding b = leastRecent;
            unbindWorker(b);
            unlink(b);
            removeFromIndex(b);
            n++;
        }
        active -= n;
        expired += n;
        return n;
    }

    /** Fewest sessions wins; ties go to the highest rendezvous weight for the session id. */
    private Worker leastLoadedLocked(List<Worker> candidates, String sessionId) {
        int min = Integer.MAX_VALUE;
        int ties = 0;
        Worker first = null;
        for (Worker w : candidates) {
            int n = countOf(w.url());
            if (n < min) {
                min = n;
                ties = 1;
                first = w;
            } else if (n == min) {
                ties++;
            }
        }
        if (ties == 1) {
            return first;
        }
        List<Worker> tied = new ArrayList<>(ties);
        for (Worker w : candidates) {
            if (countOf(w.url()) == min) {
                tied.add(w);
            }
        }
        return Rendezvous.highest(tied, sessionId, false);
    }

    private int countOf(String url) {
        WorkerSessions ws = byWorker.get(url);
        return ws == null ? 0 : ws.count;
    }

    private static Worker find(List<Worker> candidates, String url) {
        int hash = url.hashCode();
        for (int i = 0, n = candidates.size(); i < n; i++) {
            Worker w = candidates.get(i);
            String u = w.url();
            if (u == url || (u.hashCode() == hash && u.equals(url))) {
                return w;
            }
        }
        return null;
    }

    private void unbindWorker(Binding b) {
        WorkerSessions ws = b.worker;
        b.worker = null;
        if (ws != null && --ws.count == 0) {
            byWorker.remove(ws.url);
        }
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

    private void linkMostRecent(Binding b) {
        b.older = mostRecent;
        b.newer = null;
        if (mostRecent != null) {
            mostRecent.newer = b;
        } else {
            leastRecent = b;
        }
        mostRecent = b;
    }

    private void moveToMostRecent(Binding b) {
        if (b != mostRecent) {
            unlink(b);
            linkMostRecent(b);
        }
    }

    private void unlink(Binding b) {
        if (b.older != null) {
            b.older.newer = b.newer;
        } else {
            leastRecent = b.newer;
        }
        if (b.newer != null) {
            b.newer.older = b.older;
        } else {
            mostRecent = b.older;
        }
        b.older = null;
        b.newer = null;
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
    }
}
