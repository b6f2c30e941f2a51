package org.vllmrouter.redis;

import java.time.Duration;
import java.util.Set;
import org.vllmrouter.core.session.SessionStore;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionStoreProvider;
import org.vllmrouter.core.session.TrajectoryEnds;

/** {@code redis://} and {@code rediss://} (TLS) session stores; session times on the system clock. */
public final class RedisSessionStoreProvider implements SessionStoreProvider {
    @Override
    public Set<String> schemes() {
        return Set.of("redis", "rediss");
    }

    @Override
    public SessionStore open(String url, Duration ttl) throws SessionStoreException {
        return RedisSessionStore.open(url, ttl, System::currentTimeMillis);
    }

    @Override
    public SessionStore open(String url, Duration ttl, int maxSessions, TrajectoryEnds ends)
            throws SessionStoreException {
        return RedisSessionStore.open(url, ttl, System::currentTimeMillis, maxSessions, ends);
    }
}
