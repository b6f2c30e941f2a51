package org.vllmrouter.mock.rollout;

import java.util.random.RandomGenerator;

/**
 * A log-normal distribution given by its median and the standard deviation of its logarithm, with samples clamped
 * to [{@code min}, {@code max}] so one draw from the far tail cannot dominate a run.
 */
public record LogNormal(double median, double sigma, double min, double max) {
    public LogNormal {
        if (!(median > 0) || !(sigma >= 0) || !(min <= median) || !(median <= max)) {
            throw new IllegalArgumentException("log-normal needs median > 0, sigma >= 0 and min <= median <= max, got "
                    + "median=" + median + " sigma=" + sigma + " min=" + min + " max=" + max);
        }
    }

    public double sample(RandomGenerator random) {
        double x = median * Math.exp(sigma * random.nextGaussian());
        return Math.min(max, Math.max(min, x));
    }

    /** A sample rounded to a whole count, at least 1. */
    public int sampleCount(RandomGenerator random) {
        return (int) Math.max(1, Math.round(sample(random)));
    }
}
