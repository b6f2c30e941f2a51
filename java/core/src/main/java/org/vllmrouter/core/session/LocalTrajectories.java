package org.vllmrouter.core.session;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.time.Duration;
import java.util.List;

/**
 * The trajectories of a shared store's sessions as this router sees them, for a {@link SessionTable} whose store
 * keeps only bindings: a bounded map in this process, keyed by pool and session id, holding at most
 * {@code maxSessions} entries and dropping one idle for the TTL. An entry ends (is handed to {@link TrajectoryEnds})
 * when the session is released through this router, starts anew here (it ended elsewhere), expires or is evicted.
 * Each router replica holds the turns it served, so its histograms count its own part of a shared session.
 */
public final class LocalTrajectories {
    private record Key(String pool, String sessionId) {
    }

    private static final class Entry {
        long promptTokens;
        long cachedTokens = Trajectory.NOT_REPORTED;
        int turns;
        int workerChanges;

        synchronized Trajectory snapshot(String worker) {
            return new Trajectory(worker == null ? List.of() : List.of(worker), promptTokens, cachedTokens, turns,
                    workerChanges);
        }
    }

    private final Cache<Key, Entry> entries;

    public LocalTrajectories(Duration ttl, int maxSessions, TrajectoryEnds ends) {
        this.entries = Caffeine.newBuilder()
                .maximumSize(maxSessions)
                .expireAfterAccess(ttl)
                .executor(Runnable::run)
                .<Key, Entry>removalListener((key, entry, cause) -> {
                    if (entry != null && cause != RemovalCause.REPLACED) {
                        ends.ended(entry.snapshot(null));
                    }
                })
                .build();
    }

    /** The session was bound here: a new session replaces what this router kept of an earlier one of the id. */
    public void routed(String pool, String sessionId, SessionTable.Outcome outcome) {
        if (outcome == SessionTable.Outcome.STARTED) {
            entries.invalidate(new Key(pool, sessionId));
        } else if (outcome == SessionTable.Outcome.REBOUND) {
            Entry e = entries.get(new Key(pool, sessionId), k -> new Entry());
            synchronized (e) {
                e.workerChanges++;
            }
        }
    }

    public void turnEnded(String pool, String sessionId, long promptTokens, long cachedTokens) {
        Entry e = entries.get(new Key(pool, sessionId), k -> new Entry());
        synchronized (e) {
            e.turns++;
            e.promptTokens += Math.max(0, promptTokens);
            e.cachedTokens = Trajectory.add(e.cachedTokens, cachedTokens);
        }
    }

    /** The trajectory of {@code sessionId} in {@code pool} with its worker, or null when none is kept. */
    public Trajectory trajectory(String pool, String sessionId, String worker) {
        Entry e = entries.getIfPresent(new Key(pool, sessionId));
        return e == null ? null : e.snapshot(worker);
    }

    public void released(String pool, String sessionId) {
        entries.invalidate(new Key(pool, sessionId));
    }

    /** Ends the trajectories idle past the TTL now rather than at the map's next write. */
    public void expireIdle() {
        entries.cleanUp();
    }
}
