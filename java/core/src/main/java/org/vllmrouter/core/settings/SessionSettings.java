package org.vllmrouter.core.settings;

import java.time.Duration;
import java.util.List;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.policy.StickyLeastLoadedPolicy;

/**
 * Sticky sessions: where a request names its session, where sessions are kept, how many and for how long.
 *
 * @param store the session store's URL; null keeps sessions in this process
 * @param ttl idle time after which a session expires, from {@link StartEnvironment#sessionTtl()}
 */
public record SessionSettings(List<String> idHeaders, List<String> idBodyFields, String store, int maxSessions,
                              Duration ttl) {
    public static SessionSettings from(RouterConfig c, StartEnvironment env) {
        return new SessionSettings(c.sessionIdHeaders(), c.sessionIdBodyFields(), c.sessionStore(), c.maxSessions(),
                Duration.ofSeconds(StickyLeastLoadedPolicy.ttlSeconds(env.sessionTtl())));
    }
}
