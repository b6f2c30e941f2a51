package org.vllmrouter.server;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * SIGTERM and SIGINT, handled before the JVM's shutdown begins. The JVM runs its shutdown hooks at the same time as
 * each other, and java.util.logging's own hook closes the log handlers: a drain that runs in a hook loses its log
 * lines, so an operator does not see that the router drained. A signal handled here leaves logging intact.
 */
final class StopSignals implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(StopSignals.class.getName());
    private static final String[] NAMES = {"TERM", "INT"};

    private final Map<Signal, SignalHandler> previous = new LinkedHashMap<>();

    private StopSignals() {}

    /**
     * Runs {@code stop} on SIGTERM and SIGINT, in the JVM's signal thread, until {@link #close}. A signal this process
     * was started with ignored stays ignored, as the JVM leaves it; one the JVM does not let a program handle keeps
     * the JVM's default, which starts the shutdown hooks.
     */
    static StopSignals handle(Runnable stop) {
        StopSignals handled = new StopSignals();
        SignalHandler handler = signal -> stop.run();
        for (String name : NAMES) {
            Signal signal = new Signal(name);
            try {
                SignalHandler before = Signal.handle(signal, handler);
                handled.previous.put(signal, before);
                if (before == SignalHandler.SIG_IGN) {
                    Signal.handle(signal, SignalHandler.SIG_IGN);
                }
            } catch (IllegalArgumentException refused) {
                LOG.log(Level.FINE, "SIG" + name + " keeps the JVM's handling", refused);
            }
        }
        return handled;
    }

    /** Gives each signal back the handling it had before {@link #handle}. */
    @Override
    public void close() {
        previous.forEach(Signal::handle);
    }
}
