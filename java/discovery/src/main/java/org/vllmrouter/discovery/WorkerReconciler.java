package org.vllmrouter.discovery;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * Drives the workers one discovery source wants into the {@link WorkerSink}. Each URL moves one step at a time: its
 * add (with the health wait) or removal finishes before its next step starts, so a worker that flaps, changes role
 * or goes away during its health wait ends in the state last asked for. URLs never wait for each other, so one
 * worker that never becomes healthy holds up nothing else. A failed health wait is tried again after
 * {@code retryDelay} for as long as the worker is wanted.
 */
final class WorkerReconciler implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(WorkerReconciler.class.getName());

    private final WorkerSink sink;
    private final DiscoveryMetrics metrics;
    private final ScheduledExecutorService timer;
    private final long retryDelayNanos;
    private final Map<String, Slot> slots = new HashMap<>();
    private boolean closed;

    /** One URL: what the source wants there and what this reconciler has done about it. */
    private static final class Slot {
        Endpoint wanted;
        /** What this reconciler registered (and so may remove); null when nothing. */
        Endpoint registered;
        /** Registered by someone else (a static URL, {@code /add_worker}): never added or removed from here. */
        boolean foreign;
        Endpoint adding;
        CompletableFuture<WorkerSink.Outcome> pending;
        ScheduledFuture<?> retry;
    }

    WorkerReconciler(WorkerSink sink, DiscoveryMetrics metrics, ScheduledExecutorService timer, Duration retryDelay) {
        this.sink = sink;
        this.metrics = metrics;
        this.timer = timer;
        this.retryDelayNanos = retryDelay.toNanos();
    }

    /** The worker at {@code endpoint.url()} should be registered with this role and bootstrap port. */
    synchronized void want(Endpoint endpoint) {
        if (closed) {
            return;
        }
        Slot slot = slots.computeIfAbsent(endpoint.url(), url -> new Slot());
        if (endpoint.equals(slot.wanted)) {
            return;
        }
        slot.wanted = endpoint;
        slot.foreign = false;
        cancelRetry(slot);
        if (slot.pending != null && !endpoint.equals(slot.adding)) {
            slot.pending.cancel(false);
        }
        step(endpoint.url());
    }

    /** The worker at {@code url} should not be registered (any more). */
    synchronized void unwant(String url) {
        Slot slot = slots.get(url);
        if (slot == null || slot.wanted == null) {
            return;
        }
        slot.wanted = null;
        cancelRetry(slot);
        if (slot.pending != null) {
            slot.pending.cancel(false);
        }
        step(url);
    }

    private void step(String url) {
        Slot slot = slots.get(url);
        if (slot == null || slot.pending != null) {
            return;
        }
        if (slot.registered != null && !slot.registered.equals(slot.wanted)) {
            sink.remove(url);
            slot.registered = null;
            metrics.changed(0, 1);
            LOG.info("Discovery removed worker " + url);
        }
        if (slot.wanted == null) {
            slots.remove(url);
            return;
        }
        if (closed || slot.registered != null || slot.foreign || slot.retry != null) {
            return;
        }
        Endpoint target = slot.wanted;
        CompletableFuture<WorkerSink.Outcome> pending;
        try {
            pending = sink.add(target.url(), target.role(), target.bootstrapPort());
        } catch (RuntimeException e) {
            pending = CompletableFuture.failedFuture(e);
        }
        slot.adding = target;
        slot.pending = pending;
        pending.whenComplete((outcome, error) -> addFinished(target, outcome, error));
    }

    private synchronized void addFinished(Endpoint target, WorkerSink.Outcome outcome, Throwable error) {
        String url = target.url();
        Slot slot = slots.get(url);
        slot.pending = null;
        slot.adding = null;
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof CancellationException) {
            step(url);
            return;
        }
        if (cause != null) {
            LOG.warning("Could not add discovered worker " + url + ": " + cause);
            outcome = WorkerSink.Outcome.UNHEALTHY;
        }
        boolean current = target.equals(slot.wanted);
        switch (outcome) {
            case ADDED -> {
                slot.registered = target;
                metrics.changed(1, 0);
                LOG.info("Discovery added " + roleName(target) + " worker " + url
                        + (target.bootstrapPort() != null ? " (bootstrap port " + target.bootstrapPort() + ")" : ""));
            }
            case ALREADY_REGISTERED -> {
                if (current) {
                    slot.foreign = true;
                    LOG.info("Discovered worker " + url + " is registered already (static or /add_worker); "
                            + "discovery leaves it to its owner");
                }
            }
            case UNHEALTHY -> {
                if (current && !closed) {
                    LOG.warning("Discovered worker " + url + " did not become healthy; trying again in "
                            + TimeUnit.NANOSECONDS.toSeconds(retryDelayNanos) + " s");
                    slot.retry = timer.schedule(() -> retryDue(url), retryDelayNanos, TimeUnit.NANOSECONDS);
                }
            }
        }
        step(url);
    }

    private synchronized void retryDue(String url) {
        Slot slot = slots.get(url);
        if (slot != null) {
            slot.retry = null;
            step(url);
        }
    }

    private static void cancelRetry(Slot slot) {
        if (slot.retry != null) {
            slot.retry.cancel(false);
            slot.retry = null;
        }
    }

    private static String roleName(Endpoint endpoint) {
        return endpoint.role().name().toLowerCase(java.util.Locale.ROOT);
    }

    /** Stops every health wait and retry; registered workers stay registered. */
    @Override
    public synchronized void close() {
        closed = true;
        for (Slot slot : List.copyOf(slots.values())) {
            cancelRetry(slot);
            if (slot.pending != null) {
                slot.pending.cancel(false);
            }
        }
    }
}
