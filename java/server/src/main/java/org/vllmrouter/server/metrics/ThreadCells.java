package org.vllmrouter.server.metrics;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A row of numbers (one for a counter; buckets and a sum for a histogram) that many threads add to and a scrape
 * sums: each thread slot ({@link ThreadSlots}) has a copy of the row on cache lines of its own.
 *
 * <p>Why not the Prometheus client's own metrics: they count in {@code LongAdder}s, which start as one shared cell
 * and split only after a failed compare-and-set. Two event loops that take turns on the same counters rarely fail
 * one, so every request moved about ten cache lines between the cores, and the metrics code was a visible share of
 * the event loops' user CPU (docs/perf/cpu-per-request.md). A slot's owner writes its row with a plain read and an
 * opaque write: no atomic instruction and no line another core writes. Only the shared slot pays for atomics.
 */
final class ThreadCells {
    /** Longs in a 64-byte cache line. */
    private static final int LINE = 8;
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

    private final int stride;
    /** A line of padding, then a row per slot (the shared slot last), then a line of padding. */
    private final long[] cells;

    ThreadCells(int width) {
        stride = (width + LINE - 1) / LINE * LINE;
        cells = new long[LINE + (ThreadSlots.OWNED + 1) * stride + LINE];
    }

    /** Adds {@code delta} to entry {@code index} of the row of {@code slot} ({@link ThreadSlots#current()}). */
    void add(int slot, int index, long delta) {
        int i = LINE + slot * stride + index;
        if (slot == ThreadSlots.OWNED) {
            LONGS.getAndAdd(cells, i, delta);
        } else {
            LONGS.setOpaque(cells, i, (long) LONGS.getOpaque(cells, i) + delta);
        }
    }

    /** Adds {@code delta} to entry {@code index}, which holds a double's bits. */
    void addDouble(int slot, int index, double delta) {
        int i = LINE + slot * stride + index;
        if (slot == ThreadSlots.OWNED) {
            long bits;
            do {
                bits = (long) LONGS.getVolatile(cells, i);
            } while (!LONGS.compareAndSet(cells, i, bits, Double.doubleToRawLongBits(Double.longBitsToDouble(bits) + delta)));
        } else {
            long bits = (long) LONGS.getOpaque(cells, i);
            LONGS.setOpaque(cells, i, Double.doubleToRawLongBits(Double.longBitsToDouble(bits) + delta));
        }
    }

    /** Entry {@code index} summed over the slots. */
    long sum(int index) {
        long total = 0;
        for (int slot = 0; slot <= ThreadSlots.OWNED; slot++) {
            total += (long) LONGS.getOpaque(cells, LINE + slot * stride + index);
        }
        return total;
    }

    /** Entry {@code index}, a double's bits, summed over the slots. */
    double sumDouble(int index) {
        double total = 0;
        for (int slot = 0; slot <= ThreadSlots.OWNED; slot++) {
            total += Double.longBitsToDouble((long) LONGS.getOpaque(cells, LINE + slot * stride + index));
        }
        return total;
    }
}
