package org.vllmrouter.server.route;

import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.vllmrouter.core.settings.WorkerPoolSettings;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.server.worker.ControlClient;

/**
 * The calls admin, engine-control and responses routes make to workers (cache flush, loads, pause and weight sync,
 * response look-ups): one-shot, with the outbound {@code api_key} when one is set, and answered to the client on its
 * own event loop.
 */
final class ControlCalls {
    private static final Duration FAN_OUT_TIMEOUT = Duration.ofSeconds(30);

    private final WorkerRegistry workers;
    private final ControlClient client;
    private final HttpHeaders outbound = new DefaultHttpHeaders();

    ControlCalls(WorkerPoolSettings pool, WorkerRegistry workers, ControlClient client) {
        this.workers = workers;
        this.client = client;
        if (pool.apiKey() != null && !pool.apiKey().isEmpty()) {
            outbound.set(HttpHeaderNames.AUTHORIZATION, "Bearer " + pool.apiKey());
        }
    }

    CompletableFuture<ControlClient.Reply> send(EventLoop loop, HttpMethod method, String baseUrl, String target) {
        return client.send(loop, method, baseUrl, target, outbound, null, FAN_OUT_TIMEOUT);
    }

    /** A call that carries {@code body} (null: none) and may take up to {@code timeout}, as a weight update does. */
    CompletableFuture<ControlClient.Reply> send(EventLoop loop, HttpMethod method, String baseUrl, String target,
                                               byte[] body, Duration timeout) {
        return client.send(loop, method, baseUrl, target, outbound, body, timeout);
    }

    /** The registered workers served at {@code baseUrl} (its DP ranks), in registration order. */
    List<Worker> workersAt(String baseUrl) {
        return workers.all().stream().filter(w -> w.baseUrl().equals(baseUrl)).toList();
    }

    /** The base URL of the registered worker named {@code url} (its base URL or a rank's URL), or null. */
    String registeredBase(String url) {
        for (Worker w : workers.all()) {
            if (w.baseUrl().equals(url) || w.url().equals(url)) {
                return w.baseUrl();
            }
        }
        return null;
    }

    /** The client these calls go through, for the routes that wait on a worker's health. */
    ControlClient client() {
        return client;
    }

    /** The distinct base URLs of the registered workers (DP ranks share one), in registration order. */
    List<String> baseUrls() {
        LinkedHashSet<String> bases = new LinkedHashSet<>();
        for (Worker w : workers.all()) {
            bases.add(w.baseUrl());
        }
        return List.copyOf(bases);
    }
}
