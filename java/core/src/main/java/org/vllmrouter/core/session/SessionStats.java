package org.vllmrouter.core.session;

import java.util.Map;
import java.util.TreeMap;

/**
 * Sticky-session counters. {@code activeByWorker} holds the sessions bound to each worker URL (workers
 * with none are absent) and sums to {@code activeSessions}. Lifetime counters: {@code started} new
 * bindings, {@code released} by finish_session, {@code expired} dropped idle by the expiry drain,
 * {@code evicted} dropped to make room when the table was full, {@code rebound} bindings moved to another
 * worker (worker unavailable or the session idle past its TTL when it came back). Always
 * {@code activeSessions == started - released - expired - evicted}.
 */
public record SessionStats(Map<String, Integer> activeByWorker, long activeSessions, long started,
                           long released, long expired, long evicted, long rebound) {
    public static final SessionStats EMPTY = new SessionStats(Map.of(), 0, 0, 0, 0, 0, 0);

    public SessionStats {
        activeByWorker = Map.copyOf(activeByWorker);
    }

    /** Sum of two sets of counters (e.g. the prefill and decode policies). */
    public SessionStats plus(SessionStats other) {
        Map<String, Integer> merged = new TreeMap<>(activeByWorker);
        other.activeByWorker.forEach((url, n) -> merged.merge(url, n, Integer::sum));
        return new SessionStats(merged, activeSessions + other.activeSessions, started + other.started,
                released + other.released, expired + other.expired, evicted + other.evicted,
                rebound + other.rebound);
    }
}
