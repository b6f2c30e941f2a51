package org.vllmrouter.host;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.settings.LoggingSettings;
import org.vllmrouter.server.EngineLogging;
import org.vllmrouter.server.RouterServer;
import org.vllmrouter.server.RouterStartException;

/**
 * The engines Python code starts in this JVM ({@code vllm_router.bridge.graal}). When the JVM
 * shuts down (the program ended, or SIGTERM) each one still running stops accepting and drains its
 * in-flight requests first, as the process bridge's engine does when the Python process that owns
 * it dies (see docs/architecture.md, 'The process bridge').
 */
public final class InProcessEngines {

    private static final Set<RouterServer> RUNNING = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(InProcessEngines::stopAll, "vllm-router-drain"));
    }

    private InProcessEngines() {}

    /**
     * Starts an engine; returns once it listens. Its log_level and log_dir apply to this whole JVM's
     * logging, as the engine process applies them to its own.
     */
    public static RouterServer start(RouterConfig config) throws ConfigException, RouterStartException {
        EngineLogging.configure(LoggingSettings.from(config));
        RouterServer server = RouterServer.start(config);
        RUNNING.add(server);
        return server;
    }

    /** Drains and stops {@code server}; a stopped one is left as it is. */
    public static void stop(RouterServer server) {
        RUNNING.remove(server);
        server.close();
    }

    private static void stopAll() {
        List.copyOf(RUNNING).forEach(InProcessEngines::stop);
    }
}
