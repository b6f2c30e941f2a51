package org.vllmrouter.core.worker;

import java.time.Duration;
import org.vllmrouter.core.config.RouterConfig;

/**
 * How each configured worker is built: its health thresholds, its circuit breaker, and how many data-parallel
 * ranks one URL stands for.
 *
 * @param dataParallelSize ranks per URL; above 1 a URL gives {@code url@0 .. url@N-1}
 */
public record WorkerSettings(int healthFailureThreshold, int healthSuccessThreshold,
                             CircuitBreaker.Config circuitBreaker, int dataParallelSize) {
    /**
     * Upstream does not validate the health thresholds, nor the circuit breaker's, so 0 is taken as 1 (one result
     * flips the state) rather than refused.
     */
    public static WorkerSettings from(RouterConfig c) {
        return new WorkerSettings(Math.max(1, c.healthFailureThreshold()), Math.max(1, c.healthSuccessThreshold()),
                new CircuitBreaker.Config(
                        Math.max(1, c.cbFailureThreshold()),
                        Math.max(1, c.cbSuccessThreshold()),
                        Duration.ofSeconds(Math.max(0, c.cbTimeoutDurationSecs())),
                        Duration.ofSeconds(Math.max(1, c.cbWindowDurationSecs())),
                        !c.disableCircuitBreaker()),
                Math.max(1, c.intraNodeDataParallelSize()));
    }
}
