package org.vllmrouter.core.session;

import java.time.Duration;
import java.util.ServiceLoader;
import org.vllmrouter.core.config.UrlRedaction;

/** Opens the store a {@code session_store} setting names. */
public final class SessionStores {
    private SessionStores() {
    }

    /**
     * {@value SessionStoreUrl#MEMORY}: this process's memory; a URL: the {@link SessionStoreProvider} for its scheme.
     * Sessions idle for {@code ttl} expire; a memory table holds at most {@code maxSessions} (a shared store is
     * bounded by its own memory policy instead).
     */
    public static SessionStore open(String spec, Duration ttl, int maxSessions) throws SessionStoreException {
        return open(spec, ttl, maxSessions, TrajectoryEnds.NONE);
    }

    /** As {@link #open(String, Duration, int)}; {@code ends} hears each session's trajectory as it ends. */
    public static SessionStore open(String spec, Duration ttl, int maxSessions, TrajectoryEnds ends)
            throws SessionStoreException {
        if (SessionStoreUrl.MEMORY.equals(spec)) {
            return memory(ttl, maxSessions, ends);
        }
        String scheme = SessionStoreUrl.scheme(spec);
        for (SessionStoreProvider provider : ServiceLoader.load(SessionStoreProvider.class)) {
            if (provider.schemes().contains(scheme)) {
                return provider.open(spec, ttl, maxSessions, ends);
            }
        }
        throw new SessionStoreException("Session store " + UrlRedaction.redact(spec) + ": no implementation of "
                + scheme + ":// on the class path (it comes with the router-redis module)", null);
    }

    /**
     * Sessions in this process: every table is a new, empty {@link InMemorySessionTable} on the system clock, holding
     * at most {@code maxSessions} (the least recently used one makes room).
     */
    public static SessionStore memory(Duration ttl, int maxSessions) {
        return memory(ttl, maxSessions, TrajectoryEnds.NONE);
    }

    /** As {@link #memory(Duration, int)}; {@code ends} hears each session's trajectory as it ends. */
    public static SessionStore memory(Duration ttl, int maxSessions, TrajectoryEnds ends) {
        return new SessionStore() {
            @Override
            public SessionTable table(String scope) {
                return new InMemorySessionTable(ttl, maxSessions, System::nanoTime, ends);
            }

            @Override
            public String description() {
                return SessionStoreUrl.MEMORY;
            }

            @Override
            public boolean degraded() {
                return false;
            }

            @Override
            public void close() {
            }
        };
    }
}
