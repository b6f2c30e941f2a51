package org.vllmrouter.core.settings;

import java.util.List;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;

/**
 * The client-facing listener: where it binds, what a request may be, how long the router waits for a worker's
 * answer, and the event loops and socket layer it runs on.
 *
 * @param requestIdHeaders null for the default headers
 * @param eventLoops as {@link StartEnvironment#eventLoops()} gives it (null: the default count)
 * @param transport as {@link StartEnvironment#transport()} gives it (null: auto)
 */
public record ServerSettings(String host, int port, long maxPayloadSize, List<String> corsAllowedOrigins,
                             List<String> requestIdHeaders, int requestTimeoutSecs, String eventLoops,
                             String transport) {
    public static ServerSettings from(RouterConfig c, StartEnvironment env) {
        return new ServerSettings(c.host(), c.port(), c.maxPayloadSize(), c.corsAllowedOrigins(),
                c.requestIdHeaders(), c.requestTimeoutSecs(), env.eventLoops(), env.transport());
    }
}
