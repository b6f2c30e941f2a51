package org.vllmrouter.mock;

import java.util.ArrayDeque;
import java.util.function.IntSupplier;

/**
 * A worker's concurrency limit with a FIFO queue, standing in for vLLM's scheduler batch size:
 * beyond {@code max-concurrency} requests wait for a slot instead of being served at once.
 * Nothing blocks: a waiting request is a task handed a slot later, by whichever thread
 * releases one; the task itself hops back to its own event loop.
 */
final class ServiceSlots {

    private final IntSupplier limit;
    private final ArrayDeque<Runnable> waiting = new ArrayDeque<>();
    private int busy;

    ServiceSlots(IntSupplier limit) {
        this.limit = limit;
    }

    /** Runs {@code task} now if a slot is free (or there is no limit), else when one is. */
    void acquire(Runnable task) {
        synchronized (this) {
            int max = limit.getAsInt();
            if (max > 0 && busy >= max) {
                waiting.add(task);
                return;
            }
            busy++;
        }
        task.run();
    }

    /** Frees a slot and hands it to the oldest waiting task, if any. */
    void release() {
        Runnable next;
        synchronized (this) {
            next = waiting.poll();
            if (next == null) {
                busy--;
                return;
            }
        }
        next.run();
    }

    synchronized int queued() {
        return waiting.size();
    }
}
