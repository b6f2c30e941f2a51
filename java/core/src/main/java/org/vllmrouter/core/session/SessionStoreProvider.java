package org.vllmrouter.core.session;

import java.time.Duration;
import java.util.Set;

/**
 * A {@link SessionStore} implementation outside this module, found with {@link java.util.ServiceLoader} by the
 * scheme of the {@code session_store} URL, so that a router that keeps its sessions in memory needs none of its
 * libraries.
 */
public interface SessionStoreProvider {

    /** The URL schemes this provider opens, in lower case. */
    Set<String> schemes();

    /**
     * Connects to the store at {@code url} (already checked by {@link SessionStoreUrl#problem}); sessions idle for
     * {@code ttl} expire.
     *
     * @throws SessionStoreException when the store cannot be reached or refuses the connection, with a one-line
     *     reason that does not show the password
     */
    SessionStore open(String url, Duration ttl) throws SessionStoreException;

    /**
     * As {@link #open(String, Duration)}, for a router that keeps each session's {@link Trajectory}: a store that
     * cannot hold trajectories itself keeps at most {@code maxSessions} of them in this process, and {@code ends}
     * hears each one as its session ends here. The default keeps none.
     */
    default SessionStore open(String url, Duration ttl, int maxSessions, TrajectoryEnds ends)
            throws SessionStoreException {
        return open(url, ttl);
    }
}
