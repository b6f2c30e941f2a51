package org.vllmrouter.mock.rollout;

import java.util.Locale;

/**
 * KV pressure: the batch's working set ({@link Workload#workingSetTokens()}) over the workers' total KV capacity.
 * Named levels: low 0.5 (everything fits twice over), moderate 1, high 2 (half of it fits).
 */
public record Pressure(String name, double ratio) {
    public static final Pressure LOW = new Pressure("low", 0.5);
    public static final Pressure MODERATE = new Pressure("moderate", 1.0);
    public static final Pressure HIGH = new Pressure("high", 2.0);

    public Pressure {
        if (!(ratio > 0) || Double.isInfinite(ratio)) {
            throw new IllegalArgumentException("pressure must be > 0, got " + ratio);
        }
    }

    /** {@code low}, {@code moderate}, {@code high}, or a positive ratio such as {@code 1.5}. */
    public static Pressure parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        switch (t) {
            case "low":
                return LOW;
            case "moderate":
                return MODERATE;
            case "high":
                return HIGH;
            default:
                double ratio;
                try {
                    ratio = Double.parseDouble(t);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("pressure must be low, moderate, high or a ratio > 0, got '"
                            + text + "'");
                }
                return new Pressure(t, ratio);
        }
    }

    /**
     * KV blocks per worker so that {@code workers} of them hold the workload's working set {@link #ratio()} times
     * over, but never fewer than its largest request needs (else that request could run nowhere).
     */
    public int blocksPerWorker(Workload workload, int workers, CostConstants costs) {
        double tokensPerWorker = workload.workingSetTokens() / ratio / workers;
        long blocks = (long) Math.ceil(tokensPerWorker / costs.blockSize());
        int largest = 0;
        for (Trajectory t : workload.trajectories()) {
            largest = Math.max(largest, t.finalContextTokens());
        }
        long least = (largest + costs.blockSize() - 1) / costs.blockSize();
        return (int) Math.min(Integer.MAX_VALUE, Math.max(blocks, least));
    }
}
