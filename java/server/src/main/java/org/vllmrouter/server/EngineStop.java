package org.vllmrouter.server;

import java.util.function.IntConsumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * What a stop signal does, whenever it comes. The engine takes SIGTERM and SIGINT from before it starts the router,
 * not from once it serves: a signal in between would otherwise get the JVM's own handling (exit 143, no drain, and
 * the log handlers closed under the start's last lines). So a stop before the router binds its listener ends the
 * process at once: nothing can be in flight, and a long wait for workers must not hold it. From the bind until the
 * start returns a client may already be answered, so the stop is kept and carried out by the starting thread once
 * the server exists. Once it serves, the stop drains it. One drain at a time: a second stop waits for the first,
 * which ends the process. A graceful stop is a successful run, so it ends with 0; a drain that fails still ends it,
 * with 1.
 */
final class EngineStop {
    private static final Logger LOG = Logger.getLogger(EngineStop.class.getName());

    private final IntConsumer exit;
    private final Object lock = new Object();
    private AutoCloseable server;
    private boolean binding;
    private boolean requested;

    /** @param exit ends the process with a status ({@code Runtime.halt} in the engine: it runs in signal threads) */
    EngineStop(IntConsumer exit) {
        this.exit = exit;
    }

    /** The start is about to bind the router's listener: from here a stop waits for the start to end. */
    void binding() {
        synchronized (lock) {
            binding = true;
        }
    }

    /**
     * Hands over the started server. Returns false when a stop came while it started: the caller then drains it
     * ({@link #drain}) and exits without reporting ready.
     */
    boolean serving(AutoCloseable started) {
        synchronized (lock) {
            server = started;
            if (requested) {
                LOG.info("Draining the router a stop signal came for while it started");
            }
            return !requested;
        }
    }

    /** A stop signal: SIGTERM or SIGINT, in the JVM's signal thread. */
    void onSignal() {
        synchronized (lock) {
            if (server != null) {
                LOG.info("Received terminate signal, draining in-flight requests");
                exit.accept(drain());
            } else if (binding) {
                LOG.info("Received terminate signal while the router starts; it drains once started");
                requested = true;
            } else {
                LOG.info("Received terminate signal before the router listened; stopping");
                exit.accept(0);
            }
        }
    }

    /**
     * The JVM's shutdown (SIGHUP, a signal the JVM did not let the engine take): drains a serving router and ends
     * the process; otherwise it leaves the shutdown, and its status, to the JVM.
     */
    void onShutdown() {
        synchronized (lock) {
            if (server != null) {
                LOG.info("Shutting down, draining in-flight requests");
                exit.accept(drain());
            }
        }
    }

    /**
     * Drains the router and returns the status to exit with: 0, or 1 when the drain failed. A stop signal exits with
     * it; so does the starting thread (a stop came while it started) and the lifeline's. One drain at a time.
     */
    int drain() {
        synchronized (lock) {
            try {
                server.close();
                return 0;
            } catch (Throwable e) {
                // Seen when the jar was overwritten in place while the router ran: the drain's first use of a class
                // could not load it. The process must end all the same, or no later stop signal would end it.
                LOG.log(Level.SEVERE, "Draining failed; stopping without it", e);
                return 1;
            }
        }
    }
}
