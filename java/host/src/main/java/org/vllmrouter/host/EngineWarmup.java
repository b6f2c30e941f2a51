package org.vllmrouter.host;

import java.util.logging.Level;
import java.util.logging.Logger;

import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;

/**
 * Loads and initialises the engine's classes on a background thread while GraalPy parses the
 * flags on the main thread, so {@code launch} does not pay for the two one after the other.
 */
final class EngineWarmup {

    private static final Logger LOG = Logger.getLogger(EngineWarmup.class.getName());

    /** Classes whose static initialisation is costly (native transport, allocators, codecs). */
    private static final String[] CLASSES_TO_INITIALISE = {
        "org.vllmrouter.server.RouterServer",
        "org.vllmrouter.server.EngineRunner",
        "io.netty.channel.epoll.Epoll",
        "io.netty.buffer.PooledByteBufAllocator",
        "io.netty.handler.codec.http.HttpServerCodec",
        "io.netty.handler.codec.http.HttpClientCodec",
        "io.netty.handler.codec.http.HttpObjectAggregator",
    };

    private EngineWarmup() {}

    static void start() {
        Thread warmup = new Thread(EngineWarmup::run, "vllm-router-engine-warmup");
        warmup.setDaemon(true);
        warmup.setPriority(Thread.MIN_PRIORITY);
        warmup.start();
    }

    private static void run() {
        try {
            // Jackson's introspection of the RouterConfig record is the largest single cost.
            RouterConfig.fromJson("{}").toJson();
            ClassLoader loader = EngineWarmup.class.getClassLoader();
            for (String className : CLASSES_TO_INITIALISE) {
                Class.forName(className, true, loader);
            }
        } catch (ConfigException | ClassNotFoundException | LinkageError e) {
            // Warm-up is an optimisation: the engine reports real failures when it starts.
            LOG.log(Level.FINE, "engine warm-up stopped early", e);
        }
    }
}
