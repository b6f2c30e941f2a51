package org.vllmrouter.core.policy;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.worker.Worker;

/**
 * Upstream's default policy. When the in-flight loads are imbalanced (both the absolute and the
 * relative threshold exceeded) the least-loaded worker wins; otherwise the worker whose cached text
 * (approximate radix tree, one per model) shares the longest prefix with the request, if the shared
 * part is more than {@code cacheThreshold} of the request, else the worker caching the least text.
 * The chosen worker's tree gets the request text. A background task trims every worker's tree to
 * {@code maxTreeSize} characters by evicting least recently used leaves.
 */
public final class CacheAwarePolicy implements LoadBalancingPolicy {

    public record Settings(double cacheThreshold, int balanceAbsThreshold, double balanceRelThreshold,
                           int evictionIntervalSecs, long maxTreeSize) {
        /** Upstream's library defaults, used when a policy is built without CLI values (per-model hints). */
        public static final Settings LIBRARY_DEFAULTS = new Settings(0.5, 32, 1.1, 30, 10000);
    }

    private static final ScheduledExecutorService EVICTION = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "vllm-router-cache-eviction");
        t.setDaemon(true);
        return t;
    });

    private final Settings settings;
    private final ConcurrentHashMap<String, ApproximateRadixTree> treesByModel = new ConcurrentHashMap<>();
    private final ScheduledFuture<?> eviction;

    public CacheAwarePolicy(Settings settings) {
        this.settings = settings;
        int interval = settings.evictionIntervalSecs();
        this.eviction = interval > 0
                ? EVICTION.scheduleWithFixedDelay(this::evictNow, interval, interval, TimeUnit.SECONDS)
                : null;
    }

    @Override
    public String name() {
        return PolicyNames.CACHE_AWARE;
    }

    public Settings settings() {
        return settings;
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        if (candidates.isEmpty()) {
            return null;
        }
        String text = request.text();
        ApproximateRadixTree tree = treesByModel.computeIfAbsent(treeKey(request.model(), candidates),
                m -> new ApproximateRadixTree());
        Worker leastLoaded = candidates.get(0);
        int min = Integer.MAX_VALUE;
        int max = Integer.MIN_VALUE;
        for (Worker w : candidates) {
            int load = w.load();
            if (load < min) {
                min = load;
                leastLoaded = w;
            }
            max = Math.max(max, load);
        }
        boolean imbalanced = (max - min) > settings.balanceAbsThreshold() && max > min * settings.balanceRelThreshold();
        synchronized (tree) {
            Worker chosen = imbalanced ? leastLoaded : byCache(tree, candidates, text);
            tree.insert(text, chosen.url());
            return chosen;
        }
    }

    /**
     * The tree of a request: its model's when a candidate serves that model, else the shared one. Models come
     * from the client, so a tree per name it sends would grow without bound; the served models are the
     * operator's.
     */
    private static String treeKey(String model, List<Worker> candidates) {
        if (model != null) {
            for (Worker w : candidates) {
                if (w.modelId().equals(model)) {
                    return model;
                }
            }
        }
        return "";
    }

    private Worker byCache(ApproximateRadixTree tree, List<Worker> candidates, String text) {
        Set<String> urls = new HashSet<>(candidates.size() * 2);
        for (Worker w : candidates) {
            urls.add(w.url());
        }
        ApproximateRadixTree.Match match = tree.prefixMatch(text, urls);
        double rate = text.isEmpty() ? 0.0 : (double) match.matchedChars() / text.length();
        if (rate > settings.cacheThreshold() && match.tenant() != null) {
            for (Worker w : candidates) {
                if (w.url().equals(match.tenant())) {
                    return w;
                }
            }
        }
        Worker smallest = candidates.get(0);
        long smallestSize = Long.MAX_VALUE;
        for (Worker w : candidates) {
            long size = tree.size(w.url());
            if (size < smallestSize) {
                smallestSize = size;
                smallest = w;
            }
        }
        return smallest;
    }

    @Override
    public void cacheReset(List<Worker> workers) {
        for (ApproximateRadixTree tree : treesByModel.values()) {
            synchronized (tree) {
                workers.forEach(w -> tree.forget(w.url()));
            }
        }
    }

    /** Trims every worker's cached text to {@code maxTreeSize} characters now. */
    public void evictNow() {
        for (ApproximateRadixTree tree : treesByModel.values()) {
            synchronized (tree) {
                tree.evict(settings.maxTreeSize());
            }
        }
    }

    /** Characters cached for {@code workerUrl} under {@code model} (null model: requests naming none). */
    public long cachedChars(String model, String workerUrl) {
        ApproximateRadixTree tree = treesByModel.get(model == null ? "" : model);
        if (tree == null) {
            return 0;
        }
        synchronized (tree) {
            return tree.size(workerUrl);
        }
    }

    @Override
    public void close() {
        if (eviction != null) {
            eviction.cancel(false);
        }
    }
}
