package org.vllmrouter.server.worker;

import io.netty.channel.EventLoop;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.config.WorkerUrl;
import org.vllmrouter.core.settings.HealthSettings;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.discovery.WorkerSink;

/**
 * Discovered workers enter and leave the registry as {@code /add_worker} and {@code /remove_worker} do it: built by
 * the {@link WorkerFactory} (thresholds, DP ranks, circuit metrics), registered after the {@link StartupWait}
 * health wait, removed with every DP rank.
 */
public final class DiscoveredWorkerSink implements WorkerSink {
    private final HealthSettings health;
    private final WorkerRegistry workers;
    private final WorkerFactory factory;
    private final ControlClient client;
    private final EventLoop loop;

    public DiscoveredWorkerSink(HealthSettings health, WorkerRegistry workers, WorkerFactory factory,
                                ControlClient client, EventLoop loop) {
        this.health = health;
        this.workers = workers;
        this.factory = factory;
        this.client = client;
        this.loop = loop;
    }

    @Override
    public CompletableFuture<Outcome> add(String url, WorkerRole role, Integer bootstrapPort) {
        String problem = WorkerUrl.problem(url);
        if (problem != null) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("Invalid worker URL " + UrlRedaction.redact(url) + ": " + problem));
        }
        List<Worker> created = factory.create(url, role, bootstrapPort);
        if (workers.get(created.get(0).url()).isPresent()) {
            return CompletableFuture.completedFuture(Outcome.ALREADY_REGISTERED);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(health.startupTimeoutSecs());
        CompletableFuture<StartupWait.Outcome> wait = StartupWait.untilHealthy(client, loop, List.of(url),
                health.checkEndpoint(), Math.max(1, health.startupCheckIntervalSecs()), deadline);
        CompletableFuture<Outcome> result = new CompletableFuture<>();
        result.whenComplete((outcome, error) -> wait.cancel(false));
        wait.thenAccept(health -> {
            if (!health.healthy()) {
                result.complete(Outcome.UNHEALTHY);
                return;
            }
            boolean added = false;
            for (Worker w : created) {
                added |= workers.add(w);
            }
            if (!added) {
                result.complete(Outcome.ALREADY_REGISTERED);
            } else if (!result.complete(Outcome.ADDED)) {
                // Cancelled while registering: the caller no longer wants it, and was told it is not registered.
                workers.removeByBaseUrl(url);
            }
        });
        return result;
    }

    @Override
    public void remove(String url) {
        workers.removeByBaseUrl(url);
    }
}
