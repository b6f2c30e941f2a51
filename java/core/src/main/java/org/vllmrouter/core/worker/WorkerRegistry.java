package org.vllmrouter.core.worker;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The set of registered workers. Reads (the routing hot path) see an immutable snapshot without
 * locking; writes copy the snapshot.
 */
public final class WorkerRegistry {
    private record Snapshot(Map<String, Worker> byUrl, List<Worker> ordered) {
    }

    /**
     * Told of every registration and removal, whichever path made it (start-up, /add_worker, discovery), under the
     * registry's lock: a listener hands the news to its own thread and returns.
     */
    public interface Listener {
        void added(Worker worker);

        void removed(List<Worker> workers);
    }

    private volatile Snapshot snapshot = new Snapshot(Map.of(), List.of());
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();

    public void addListener(Listener listener) {
        listeners.add(listener);
    }

    /** Registers {@code worker}; false (and nothing changes) when a worker with its URL exists. */
    public synchronized boolean add(Worker worker) {
        if (snapshot.byUrl().containsKey(worker.url())) {
            return false;
        }
        Map<String, Worker> next = new LinkedHashMap<>();
        for (Worker w : snapshot.ordered()) {
            next.put(w.url(), w);
        }
        next.put(worker.url(), worker);
        publish(next);
        listeners.forEach(l -> l.added(worker));
        return true;
    }

    /**
     * Removes the worker named {@code baseUrl} and every DP rank {@code baseUrl@rank}; returns them. A removed worker's
     * pause ends, so nothing stays held for it.
     */
    public synchronized List<Worker> removeByBaseUrl(String baseUrl) {
        List<Worker> removed = new ArrayList<>();
        Map<String, Worker> next = new LinkedHashMap<>();
        for (Worker w : snapshot.ordered()) {
            if (w.baseUrl().equals(baseUrl) || w.url().equals(baseUrl)) {
                removed.add(w);
            } else {
                next.put(w.url(), w);
            }
        }
        if (!removed.isEmpty()) {
            publish(next);
            listeners.forEach(l -> l.removed(removed));
            // Turns held for a removed worker's resume would wait out their timeout: they go on now, and a
            // session re-binds as for any removed worker.
            removed.forEach(w -> w.pause().resume());
        }
        return removed;
    }

    public Optional<Worker> get(String url) {
        return Optional.ofNullable(snapshot.byUrl().get(url));
    }

    /** All workers in registration order. */
    public List<Worker> all() {
        return snapshot.ordered();
    }

    public List<Worker> all(WorkerRole role) {
        List<Worker> out = new ArrayList<>();
        for (Worker w : snapshot.ordered()) {
            if (w.role() == role) {
                out.add(w);
            }
        }
        return out;
    }

    /**
     * Available workers (healthy, circuit allows) of {@code role} serving {@code model}, in registration
     * order. A null model, or a model no registered worker of the role serves, means any model: a
     * request naming a model whose workers are all down gets no candidates rather than a wrong model.
     * The list is read-only: when every registered worker qualifies, as it usually does, it is the
     * registry's own, so choosing a worker copies nothing.
     */
    public List<Worker> candidates(String model, WorkerRole role) {
        List<Worker> workers = snapshot.ordered();
        boolean modelServed = false;
        if (model != null) {
            for (int i = 0; i < workers.size(); i++) {
                Worker w = workers.get(i);
                if (w.role() == role && w.modelId().equals(model)) {
                    modelServed = true;
                    break;
                }
            }
        }
        int qualifying = 0;
        while (qualifying < workers.size() && qualifies(workers.get(qualifying), model, role, modelServed)) {
            qualifying++;
        }
        if (qualifying == workers.size()) {
            return workers;
        }
        List<Worker> out = new ArrayList<>(workers.size() - 1);
        out.addAll(workers.subList(0, qualifying));
        for (int i = qualifying + 1; i < workers.size(); i++) {
            if (qualifies(workers.get(i), model, role, modelServed)) {
                out.add(workers.get(i));
            }
        }
        return Collections.unmodifiableList(out);
    }

    private static boolean qualifies(Worker w, String model, WorkerRole role, boolean modelServed) {
        return w.role() == role && (!modelServed || w.modelId().equals(model)) && w.isAvailable();
    }

    public int size() {
        return snapshot.ordered().size();
    }

    private void publish(Map<String, Worker> next) {
        snapshot = new Snapshot(Map.copyOf(next), List.copyOf(next.values()));
    }
}
