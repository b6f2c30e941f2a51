package org.vllmrouter.core.policy;

import java.util.List;
import java.util.Map;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.Trajectory;
import org.vllmrouter.core.worker.Worker;

/**
 * Chooses a worker for a request among the available candidates (upstream's policy trait). The lifecycle hooks
 * (idle-session expiry, session counters, close) default to "nothing to do"; policies that own sessions or
 * background work override them, so the registry never needs to know which policy it holds.
 */
public interface LoadBalancingPolicy {
    String name();

    /** The chosen worker, or null when there is none (e.g. no candidates). */
    Worker select(List<Worker> candidates, RoutingRequest request);

    /**
     * True when the policy weighs each candidate's cached prefix of the request ({@link RoutingRequest#prefix()}):
     * the route then finds the prompt's tokens and the candidates' residency before {@link #select}, off the event
     * loop, since select itself never waits.
     */
    default boolean usesPrefixResidency() {
        return false;
    }

    /**
     * The worker chosen for {@code request} has begun to answer it (the first part of its answer reached the router),
     * or the call ended before it did: the prompt no longer waits there to be computed. Called once per call a policy
     * chose the worker for, before {@link #onComplete}.
     */
    default void answerStarted(Worker worker, RoutingRequest request) {
    }

    /** Called when a request sent to {@code worker} has completed. */
    default void onComplete(Worker worker, boolean success) {
    }

    /**
     * The KV caches of {@code workers} were emptied (a prefix-cache reset, or a pause that cleared them): a policy
     * that models what a worker holds forgets it, so the next turns are not sent for a prefix that is gone. Sessions
     * and load are untouched.
     */
    default void cacheReset(List<Worker> workers) {
    }

    /** Releases a sticky session; a no-op for policies that keep none. */
    default void finishSession(String sessionId) {
    }

    /** Drops up to {@code maxEntries} sessions idle past their TTL (for a background sweeper); returns how many. */
    default int expireIdle(int maxEntries) {
        return 0;
    }

    /**
     * True when the policy keeps sessions, and with them each session's {@link Trajectory}: only then does the proxy
     * read the usage of a session's answers for {@link #turnEnded}.
     */
    default boolean keepsSessions() {
        return false;
    }

    /**
     * A request of {@code request}'s session ended, its worker having reported {@code promptTokens} and
     * {@code cachedTokens} (negative: not reported); a no-op for policies that keep no sessions.
     */
    default void turnEnded(RoutingRequest request, long promptTokens, long cachedTokens) {
    }

    /** The trajectory of a tracked session, or null (unknown id, or a policy that keeps no sessions). */
    default Trajectory trajectory(String sessionId) {
        return null;
    }

    /** The policy's sticky-session counters; empty for policies that keep no sessions. */
    default SessionStats sessionStats() {
        return SessionStats.EMPTY;
    }

    /**
     * Per worker URL, the share of prompt tokens the worker found in its KV cache for the requests this policy
     * routed there (0 to 1), for the status page; empty when the policy does not observe the workers' caches.
     */
    default Map<String, Double> kvCacheHitRates() {
        return Map.of();
    }

    /** Stops the policy's background work, if it has any. */
    default void close() {
    }
}
