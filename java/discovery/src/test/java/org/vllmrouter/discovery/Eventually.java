package org.vllmrouter.discovery;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Waits for a state the system reaches on its own (asynchronous discovery); never a timing assertion. */
final class Eventually {
    static final Duration LIMIT = Duration.ofSeconds(60);

    private Eventually() {}

    static void await(String what, BooleanSupplier condition) {
        await(what, condition, () -> "");
    }

    static void await(String what, BooleanSupplier condition, Supplier<Object> state) {
        long deadline = System.nanoTime() + LIMIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not reached within " + LIMIT.toSeconds() + " s: " + what + "; now: "
                        + state.get());
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what);
            }
        }
    }
}
