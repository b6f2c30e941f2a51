package org.vllmrouter.sim;

import java.util.Arrays;

/** Nearest-rank percentiles of a set of values. */
final class Percentiles {
    private final double[] sorted;

    Percentiles(double[] values) {
        this.sorted = values.clone();
        Arrays.sort(sorted);
    }

    /** The value at or below which {@code p} percent of the values lie; 0 when there are none. */
    double at(double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    double max() {
        return sorted.length == 0 ? 0 : sorted[sorted.length - 1];
    }
}
