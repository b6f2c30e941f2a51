package org.vllmrouter.server;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * The parts of a router in the order they started, each with how it stops; {@link #close} stops them in reverse.
 * A start that fails half-way and a router's close both end here, so they stop the same parts the same way. A part
 * that fails to stop does not keep the ones before it from stopping: the first failure is thrown once all have had
 * their turn, with any later ones suppressed.
 */
final class StartedParts {
    private final Deque<Runnable> stops = new ArrayDeque<>();

    /** Registers how a part that has just started stops. */
    void add(Runnable stop) {
        stops.push(stop);
    }

    void close() {
        RuntimeException failure = null;
        for (Runnable stop = stops.poll(); stop != null; stop = stops.poll()) {
            try {
                stop.run();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
