package org.vllmrouter.discovery;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.vllmrouter.core.worker.WorkerRole;

/**
 * A worker registry in miniature: what is registered, by URL. Workers are healthy at once unless their URL is in
 * {@link #unhealthy}; {@link #held} URLs stay in their health wait until the test completes the future.
 */
final class RecordingSink implements WorkerSink {
    final Map<String, Endpoint> registered = new ConcurrentHashMap<>();
    final Set<String> unhealthy = ConcurrentHashMap.newKeySet();
    final Set<String> held = ConcurrentHashMap.newKeySet();
    final Map<String, CompletableFuture<Outcome>> waiting = new ConcurrentHashMap<>();

    @Override
    public CompletableFuture<Outcome> add(String url, WorkerRole role, Integer bootstrapPort) {
        if (registered.containsKey(url)) {
            return CompletableFuture.completedFuture(Outcome.ALREADY_REGISTERED);
        }
        CompletableFuture<Outcome> wait = new CompletableFuture<>();
        CompletableFuture<Outcome> result = wait.thenApply(outcome -> {
            if (outcome == Outcome.ADDED) {
                registered.put(url, new Endpoint(url, role, bootstrapPort));
            }
            return outcome;
        });
        if (held.contains(url)) {
            waiting.put(url, wait);
        } else {
            wait.complete(unhealthy.contains(url) ? Outcome.UNHEALTHY : Outcome.ADDED);
        }
        return result;
    }

    @Override
    public void remove(String url) {
        registered.remove(url);
    }
}
