package org.vllmrouter.server.worker;

import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Logger;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.policy.LiveLoad;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;

/**
 * Gathers each worker's own load from its {@code /metrics} every interval, for the policies that read it
 * ({@link LiveLoad}): the exchanges go through the control client on the control loop, the text is read on a thread
 * of its own, so neither an event loop nor a routing decision waits for a worker. A sample older than
 * {@link #STALE_AFTER_ROUNDS} intervals is no longer given out; a worker whose {@code /metrics} fails (no answer, not
 * 2xx, no vLLM load series) has none until it answers again, and that is logged once per failing spell.
 */
public final class WorkerLoadScraper implements LiveLoad, AutoCloseable {
    static final int STALE_AFTER_ROUNDS = 3;
    private static final Logger LOG = Logger.getLogger(WorkerLoadScraper.class.getName());
    private static final byte[] NO_BODY = new byte[0];

    private record Timed(Sample sample, long atNanos) {
    }

    private final WorkerRegistry workers;
    private final ControlClient client;
    private final EventLoop loop;
    private final long intervalNanos;
    private final LongSupplier nanoClock;
    private final ConcurrentHashMap<String, Timed> samples = new ConcurrentHashMap<>();
    private final Set<String> failing = ConcurrentHashMap.newKeySet();
    private final ExecutorService reader = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "vllm-router-load-metrics");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean closed;
    private ScheduledFuture<?> next;

    public WorkerLoadScraper(WorkerRegistry workers, ControlClient client, EventLoop loop, Duration interval,
                             LongSupplier nanoClock) {
        this.workers = workers;
        this.client = client;
        this.loop = loop;
        this.intervalNanos = interval.toNanos();
        this.nanoClock = nanoClock;
    }

    public void start() {
        loop.execute(this::round);
    }

    @Override
    public Sample of(String baseUrl) {
        Timed t = samples.get(baseUrl);
        return t == null || nanoClock.getAsLong() - t.atNanos() > STALE_AFTER_ROUNDS * intervalNanos ? null : t.sample();
    }

    private void round() {
        if (closed) {
            return;
        }
        Set<String> bases = new LinkedHashSet<>();
        for (Worker w : workers.all()) {
            bases.add(w.baseUrl());
        }
        samples.keySet().retainAll(bases);
        failing.retainAll(bases);
        Duration timeout = Duration.ofNanos(intervalNanos);
        for (String base : bases) {
            client.send(loop, HttpMethod.GET, base, "/metrics", EmptyHttpHeaders.INSTANCE, NO_BODY, timeout)
                    .whenCompleteAsync((reply, error) -> {
                        Sample s = error == null && reply.ok()
                                ? VllmLoadMetrics.parse(new String(reply.body(), StandardCharsets.UTF_8)) : null;
                        record(base, s, error != null ? error.toString()
                                : reply.ok() ? "no vLLM load series" : "status " + reply.status());
                    }, reader);
        }
        next = loop.schedule(this::round, intervalNanos, TimeUnit.NANOSECONDS);
    }

    private void record(String base, Sample s, String failure) {
        if (s != null) {
            samples.put(base, new Timed(s, nanoClock.getAsLong()));
            if (failing.remove(base)) {
                LOG.info("Worker " + UrlRedaction.redact(base) + ": /metrics answers again; its load is read from it");
            }
            return;
        }
        samples.remove(base);
        if (failing.add(base)) {
            LOG.warning("Worker " + UrlRedaction.redact(base) + ": no load from /metrics (" + failure
                    + "); placing without it until it answers");
        }
    }

    @Override
    public void close() {
        closed = true;
        ScheduledFuture<?> pending = next;
        if (pending != null) {
            pending.cancel(false);
        }
        reader.shutdownNow();
    }
}
