package org.vllmrouter.server.worker;

import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpMethod;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Polls workers' health endpoint until one answers 2xx or a deadline passes (start-up and /add_worker). */
public final class StartupWait {
    /** Upstream probes each host with a 2 s timeout during start-up. */
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

    private StartupWait() {}

    /**
     * Completes true as soon as any of {@code baseUrls} is healthy, false once {@code deadlineNanos} has passed.
     * Cancelling the result stops the probing.
     */
    public static CompletableFuture<Boolean> untilHealthy(EventLoop loop, List<String> baseUrls, String endpoint,
                                                   int intervalSecs, long deadlineNanos) {
        CompletableFuture<Boolean> result = new CompletableFuture<>();
        round(loop, List.copyOf(new LinkedHashSet<>(baseUrls)), endpoint, intervalSecs, deadlineNanos, result);
        return result;
    }

    private static void round(EventLoop loop, List<String> bases, String endpoint, int intervalSecs, long deadlineNanos,
                              CompletableFuture<Boolean> result) {
        if (result.isDone()) {
            return;
        }
        List<CompletableFuture<Boolean>> probes = new ArrayList<>(bases.size());
        for (String base : bases) {
            probes.add(probe(loop, base, endpoint, PROBE_TIMEOUT));
        }
        CompletableFuture.allOf(probes.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
            if (probes.stream().anyMatch(p -> p.getNow(false))) {
                result.complete(true);
                return;
            }
            long remaining = deadlineNanos - System.nanoTime();
            if (remaining <= 0) {
                result.complete(false);
                return;
            }
            long delay = Math.min(remaining, TimeUnit.SECONDS.toNanos(intervalSecs));
            loop.schedule(() -> round(loop, bases, endpoint, intervalSecs, deadlineNanos, result), delay, TimeUnit.NANOSECONDS);
        });
    }

    /** Completes (never exceptionally) with whether {@code GET base+endpoint} answered 2xx in time. */
    static CompletableFuture<Boolean> probe(EventLoop loop, String baseUrl, String endpoint, Duration timeout) {
        return ControlClient.send(loop, HttpMethod.GET, baseUrl, endpoint, null, null, timeout)
                .handle((reply, error) -> reply != null && reply.ok());
    }
}
