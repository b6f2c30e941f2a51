package org.vllmrouter.server.worker;

import io.netty.channel.EventLoop;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;

/**
 * Background health checks: every {@code health_check_interval_secs} each distinct worker host is probed once
 * (DP ranks share it) and every worker on it records the result, which flips health after the configured
 * consecutive failures/successes. Rounds never overlap.
 */
public final class HealthChecker implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(HealthChecker.class.getName());

    private final WorkerRegistry workers;
    private final ControlClient client;
    private final EventLoop loop;
    private final String endpoint;
    private final Duration timeout;
    private final long intervalNanos;
    private volatile boolean closed;
    private ScheduledFuture<?> next;

    public HealthChecker(WorkerRegistry workers, ControlClient client, EventLoop loop, String endpoint, int intervalSecs,
                         int timeoutSecs) {
        this.workers = workers;
        this.client = client;
        this.loop = loop;
        this.endpoint = endpoint;
        this.timeout = Duration.ofSeconds(Math.max(1, timeoutSecs));
        this.intervalNanos = TimeUnit.SECONDS.toNanos(Math.max(1, intervalSecs));
    }

    public void start() {
        loop.execute(this::scheduleNext);
    }

    private void scheduleNext() {
        if (!closed) {
            next = loop.schedule(this::round, intervalNanos, TimeUnit.NANOSECONDS);
        }
    }

    private void round() {
        Map<String, List<Worker>> byBase = new LinkedHashMap<>();
        for (Worker w : workers.all()) {
            byBase.computeIfAbsent(w.baseUrl(), k -> new java.util.ArrayList<>()).add(w);
        }
        CompletableFuture<?>[] probes = byBase.entrySet().stream()
                .map(e -> StartupWait.probe(client, loop, e.getKey(), endpoint, timeout).thenAccept(probe -> {
                    for (Worker w : e.getValue()) {
                        boolean was = w.isHealthy();
                        w.recordHealthCheck(probe.healthy());
                        if (was != w.isHealthy()) {
                            LOG.info("Worker " + w.shownUrl() + " is now "
                                    + (w.isHealthy() ? "healthy" : "unhealthy (" + probe.failure() + ")"));
                        }
                    }
                }))
                .toArray(CompletableFuture[]::new);
        CompletableFuture.allOf(probes).whenComplete((v, e) -> loop.execute(this::scheduleNext));
    }

    @Override
    public void close() {
        closed = true;
        ScheduledFuture<?> pending = next;
        if (pending != null) {
            pending.cancel(false);
        }
    }
}
