package org.vllmrouter.core.session;

import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;
import org.vllmrouter.core.worker.Worker;

/**
 * Sticky-session state of one sticky_least_loaded policy instance: which worker each session is bound
 * to, how many sessions each worker holds, and when each session was last used.
 *
 * <p>Every operation is atomic with respect to the others, so an implementation backed by a shared
 * store (several router replicas) must run each one as a single transaction or server-side script.
 * Sessions are scoped by a pool (the request's model), so one id used for two models is two sessions;
 * counts are per worker URL across pools.
 */
public interface SessionTable {

    /** How {@link #route} placed the request. */
    enum Outcome {
        /** The session's existing binding was used (and refreshed). */
        EXISTING,
        /** A session not tracked before was bound. */
        STARTED,
        /**
         * A tracked session moved: its worker is no longer a candidate, it was idle past the TTL, or its placement
         * no longer keeps it there ({@link Placement#keeps}).
         */
        REBOUND
    }

    /** Where a session's request goes, and the session count of that worker afterwards. */
    record Assignment(Worker worker, Outcome outcome, int activeOnWorker) {
    }

    /**
     * Routes one request of session ({@code pool}, {@code sessionId}) among {@code candidates}
     * (non-empty): keeps the binding when its worker is a candidate and the session has been idle for
     * less than the TTL, otherwise binds the session to the candidate with the fewest sessions, ties
     * broken by the highest {@code fbi_hash("<sessionId>:<url>")} and then by candidate order
     * ({@link LeastLoaded}). Lookup, choice and reservation are one atomic step.
     */
    Assignment route(String pool, String sessionId, List<Worker> candidates);

    /**
     * How a policy places a new or re-bound session itself: called inside {@link #route}'s atomic step, one call at a
     * time per table, so a placement and the reservation it leads to cannot interleave with another.
     */
    @FunctionalInterface
    interface Placement {
        /**
         * The candidate (one of {@code candidates}) that session {@code sessionId}, weighing {@code tokens}, is bound
         * to; {@code tokensOf} gives each worker URL's bound tokens (the sum of its sessions' weights) as the table
         * holds them, without this session.
         */
        Worker place(List<Worker> candidates, String sessionId, long tokens, ToLongFunction<String> tokensOf);

        /**
         * Whether session {@code sessionId}, bound to {@code current} (a candidate) and now weighing {@code tokens},
         * stays there; false moves it (a {@link Outcome#REBOUND}, placed again by {@link #place}). Called inside the
         * same atomic step; {@code tokensOf} as in {@link #place}, without this session. By default a session stays.
         */
        default boolean keeps(Worker current, List<Worker> candidates, String sessionId, long tokens,
                              ToLongFunction<String> tokensOf) {
            return true;
        }
    }

    /**
     * {@link #route}, where a new or re-bound session goes where {@code placement} says, and the binding carries
     * {@code tokens} (a session's last prompt: its weight in {@link Placement#place}'s per-worker sums), set on every
     * request of the session. Tables that choose inside a shared store keep their own rule (the fewest sessions) and
     * no weights: {@link #placesByPolicy()} says which kind this table is.
     */
    default Assignment route(String pool, String sessionId, List<Worker> candidates, Placement placement,
                             long tokens) {
        return route(pool, sessionId, candidates);
    }

    /** True when {@link #route(String, String, List, Placement, long)} honours the placement and the weights. */
    default boolean placesByPolicy() {
        return false;
    }

    /** The candidates holding the fewest sessions, in candidate order; changes nothing. */
    List<Worker> leastLoaded(List<Worker> candidates);

    /** Releases {@code sessionId} in every pool; returns how many bindings that released (0: unknown id). */
    int release(String sessionId);

    /** Drops at most {@code maxEntries} sessions idle for at least the TTL; returns how many it dropped. */
    int expireIdle(int maxEntries);

    SessionStats stats();

    /**
     * One request of session ({@code pool}, {@code sessionId}) ended: a turn of its {@link Trajectory}, with the
     * prompt and cached token counts its worker reported (negative: not reported). A session not tracked (released
     * or evicted meanwhile) is left alone. Tables that keep no trajectories ignore it.
     */
    default void turnEnded(String pool, String sessionId, long promptTokens, long cachedTokens) {
    }

    /** The clock (nanoseconds) the table's idle TTL runs on, for policies that time sessions alongside it. */
    default LongSupplier clock() {
        return System::nanoTime;
    }

    /** The trajectory of {@code sessionId} over every pool, or null when the session is not tracked. */
    default Trajectory trajectory(String sessionId) {
        return null;
    }
}
