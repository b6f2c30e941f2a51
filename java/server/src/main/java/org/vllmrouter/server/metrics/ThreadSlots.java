package org.vllmrouter.server.metrics;

import io.netty.util.concurrent.FastThreadLocal;

/**
 * Which slot of the per-thread counts ({@link ThreadCells}) a thread writes. The first threads to count (in a
 * router, its event loops: one a core) each own a slot and are its only writer; any thread beyond them shares one
 * slot, which takes atomic adds. A slot whose owner has ended passes to the next thread that asks: a thread that is
 * no longer alive has finished writing, and {@link Thread#isAlive()} returning false makes its writes visible.
 */
final class ThreadSlots {
    /** Slots with one owner each: enough for the event loops (one a core) and as many other threads. */
    static final int OWNED = Math.min(64, 2 * Math.max(1, Runtime.getRuntime().availableProcessors()));

    static final ThreadSlots GLOBAL = new ThreadSlots(OWNED);

    private static final FastThreadLocal<Integer> CURRENT = new FastThreadLocal<>() {
        @Override
        protected Integer initialValue() {
            return GLOBAL.claim(Thread.currentThread());
        }
    };

    private final Thread[] owners;

    ThreadSlots(int owned) {
        owners = new Thread[owned];
    }

    /** The slot the current thread writes: below {@link #OWNED} when it is its own, else {@link #OWNED}. */
    static int current() {
        return CURRENT.get();
    }

    /** A free slot for {@code thread}, or the shared one ({@code owners.length}) when every slot has a live owner. */
    synchronized int claim(Thread thread) {
        for (int i = 0; i < owners.length; i++) {
            Thread owner = owners[i];
            if (owner == null || owner == thread || !owner.isAlive()) {
                owners[i] = thread;
                return i;
            }
        }
        return owners.length;
    }
}
