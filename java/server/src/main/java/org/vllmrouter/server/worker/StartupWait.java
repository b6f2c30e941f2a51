package org.vllmrouter.server.worker;

import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpMethod;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.vllmrouter.core.config.UrlRedaction;

/** Polls workers' health endpoint until one answers 2xx or a deadline passes (start-up and /add_worker). */
public final class StartupWait {
    /** Upstream probes each host with a 2 s timeout during start-up. */
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

    /** One health check: healthy, or why not ({@code failure}, e.g. "HTTP 503" or why TLS failed). */
    record Probe(String baseUrl, boolean healthy, String failure) {}

    /**
     * How a wait ended: a worker answered 2xx, or the deadline passed; then {@code lastFailures} says how each worker's
     * last check failed, so a start-up error names the cause (a refused connection, an untrusted certificate).
     */
    public record Outcome(boolean healthy, String lastFailures) {}

    private StartupWait() {}

    /**
     * Completes healthy as soon as any of {@code baseUrls} is healthy, unhealthy once {@code deadlineNanos} has
     * passed. Cancelling the result stops the probing.
     */
    public static CompletableFuture<Outcome> untilHealthy(ControlClient client, EventLoop loop, List<String> baseUrls,
                                                          String endpoint, int intervalSecs, long deadlineNanos) {
        CompletableFuture<Outcome> result = new CompletableFuture<>();
        round(client, loop, List.copyOf(new LinkedHashSet<>(baseUrls)), endpoint, intervalSecs, deadlineNanos, result);
        return result;
    }

    private static void round(ControlClient client, EventLoop loop, List<String> bases, String endpoint,
                              int intervalSecs, long deadlineNanos, CompletableFuture<Outcome> result) {
        if (result.isDone()) {
            return;
        }
        List<CompletableFuture<Probe>> probes = new ArrayList<>(bases.size());
        for (String base : bases) {
            probes.add(probe(client, loop, base, endpoint, PROBE_TIMEOUT));
        }
        CompletableFuture.allOf(probes.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
            List<Probe> done = probes.stream().map(CompletableFuture::join).toList();
            if (done.stream().anyMatch(Probe::healthy)) {
                result.complete(new Outcome(true, null));
                return;
            }
            long remaining = deadlineNanos - System.nanoTime();
            if (remaining <= 0) {
                result.complete(new Outcome(false, done.stream()
                        .map(p -> UrlRedaction.redact(p.baseUrl()) + ": " + p.failure())
                        .collect(Collectors.joining("; "))));
                return;
            }
            long delay = Math.min(remaining, TimeUnit.SECONDS.toNanos(intervalSecs));
            loop.schedule(() -> round(client, loop, bases, endpoint, intervalSecs, deadlineNanos, result), delay,
                    TimeUnit.NANOSECONDS);
        });
    }

    /** Completes (never exceptionally) with whether {@code GET base+endpoint} answered 2xx in time, and if not why. */
    static CompletableFuture<Probe> probe(ControlClient client, EventLoop loop, String baseUrl, String endpoint,
                                          Duration timeout) {
        return client.send(loop, HttpMethod.GET, baseUrl, endpoint, null, null, timeout)
                .handle((reply, error) -> {
                    if (reply != null) {
                        return new Probe(baseUrl, reply.ok(), reply.ok() ? null : "HTTP " + reply.status());
                    }
                    String message = error.getMessage();
                    return new Probe(baseUrl, false, message == null ? error.getClass().getSimpleName() : message);
                });
    }
}
