package org.vllmrouter.server;

import org.vllmrouter.core.config.StartEnvironment;

/**
 * How many event loops a router runs. {@code TOKIO_WORKER_THREADS}, the variable that sizes the Rust router's
 * runtime, sizes ours too, so an environment tuned for upstream keeps its meaning. Unset, a router takes half the
 * processors (at least one, at most {@link #MAX_DEFAULT}).
 *
 * <p>Why not one loop a processor, as tokio does: a router shares its machine with the kernel's network stack and,
 * in front of co-located workers, with its clients and workers too. With a loop a processor, the loops and the
 * processes they serve take turns on the cores, and a request whose loop has just lost its core waits for a time
 * slice: on two cores one loop took less CPU a request and had a shorter p99 than two (docs/perf/event-loops.md). At
 * most eight by default because each loop keeps its own ring, buffers and connections to every worker, while one loop
 * already relays far more requests a second than a fleet of LLM workers asks of a router.
 */
final class EventLoopCount {
    static final String ENVIRONMENT_VARIABLE = StartEnvironment.EVENT_LOOPS_VARIABLE;
    static final int MAX_DEFAULT = 8;

    private EventLoopCount() {
    }

    /**
     * The loops to run: {@code requested} (the variable's value, {@link StartEnvironment#eventLoops()}) when it is
     * set, else the default for {@code processors}.
     */
    static int resolve(String requested, int processors) {
        if (requested == null) {
            return Math.max(1, Math.min(MAX_DEFAULT, processors / 2));
        }
        int loops;
        try {
            loops = Integer.parseInt(requested.trim());
        } catch (NumberFormatException e) {
            loops = 0;
        }
        if (loops < 1) {
            throw new IllegalArgumentException(ENVIRONMENT_VARIABLE
                    + " must be a positive whole number of event loops; got '" + requested + "'");
        }
        return loops;
    }
}
