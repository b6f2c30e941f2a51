package org.vllmrouter.core.policy;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.function.LongSupplier;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.session.InMemorySessionTable;
import org.vllmrouter.core.session.LeastLoaded;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.Trajectory;
import org.vllmrouter.core.worker.Worker;

/**
 * sticky_least_loaded: a new session reserves the candidate with the fewest active sessions
 * (rendezvous tie-break on the session id); later requests of the session stay on that worker until
 * the session is released, idles past the TTL, or its worker stops being a candidate. Requests without
 * a session id go to the least-loaded candidate (tie-break on the request text) and are not recorded.
 * Sessions are scoped by the request's model. The rules every change must keep: docs/architecture.md,
 * 'sticky_least_loaded invariants'.
 */
public final class StickyLeastLoadedPolicy implements LoadBalancingPolicy {
    public static final long DEFAULT_TTL_SECONDS = 7200;

    private static final System.Logger LOG = System.getLogger(StickyLeastLoadedPolicy.class.getName());
    private static final String NO_MODEL_POOL = "";

    private final SessionTable sessions;

    public StickyLeastLoadedPolicy(Duration ttl, LongSupplier nanoClock) {
        this(new InMemorySessionTable(ttl, nanoClock));
    }

    public StickyLeastLoadedPolicy(SessionTable sessions) {
        this.sessions = sessions;
    }

    /**
     * The TTL in seconds given the raw environment value: a non-negative integer, else the default
     * (with a warning when a value was set but unusable).
     */
    public static long ttlSeconds(String raw) {
        if (raw == null || raw.isBlank()) {
            return DEFAULT_TTL_SECONDS;
        }
        try {
            long seconds = Long.parseLong(raw.trim());
            if (seconds >= 0) {
                return seconds;
            }
        } catch (NumberFormatException unparsable) {
            // Reported below, like a negative value.
        }
        LOG.log(Level.WARNING, "SLL: ignoring {0}=''{1}'' (not a non-negative integer); using {2} s",
                StartEnvironment.SESSION_TTL_VARIABLE, raw, String.valueOf(DEFAULT_TTL_SECONDS));
        return DEFAULT_TTL_SECONDS;
    }

    @Override
    public String name() {
        return PolicyNames.STICKY_LEAST_LOADED;
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        if (candidates.isEmpty()) {
            return null;
        }
        String sessionId = request.sessionId();
        if (sessionId == null) {
            List<Worker> least = sessions.leastLoaded(candidates);
            // Weights are hashed outside the table's lock: the key is the whole body and may be large.
            return LeastLoaded.tieBreak(least, request.text());
        }
        String pool = poolOf(request);
        SessionTable.Assignment a = sessions.route(pool, sessionId, candidates);
        // Per-session lines are DEBUG: a trainer starts thousands of sessions a minute.
        if (a.outcome() != SessionTable.Outcome.EXISTING && LOG.isLoggable(Level.DEBUG)) {
            LOG.log(Level.DEBUG, "SLL: new session ''{0}'' -> replica ''{1}'' (active sessions on replica: {2})",
                    sessionId, a.worker().shownUrl(), a.activeOnWorker());
        }
        return a.worker();
    }

    @Override
    public void finishSession(String sessionId) {
        int released = sessions.release(sessionId);
        if (released > 0) {
            LOG.log(Level.DEBUG, "SLL: finished session ''{0}''", sessionId);
        } else {
            LOG.log(Level.DEBUG, "SLL: finish for unknown session ''{0}''", sessionId);
        }
    }

    @Override
    public boolean keepsSessions() {
        return true;
    }

    @Override
    public void turnEnded(RoutingRequest request, long promptTokens, long cachedTokens) {
        String sessionId = request.sessionId();
        if (sessionId != null) {
            sessions.turnEnded(poolOf(request), sessionId, promptTokens, cachedTokens);
        }
    }

    @Override
    public Trajectory trajectory(String sessionId) {
        return sessions.trajectory(sessionId);
    }

    private static String poolOf(RoutingRequest request) {
        return request.model() == null ? NO_MODEL_POOL : request.model();
    }

    @Override
    public int expireIdle(int maxEntries) {
        return sessions.expireIdle(maxEntries);
    }

    @Override
    public SessionStats sessionStats() {
        return sessions.stats();
    }

    public SessionTable sessionTable() {
        return sessions;
    }
}
