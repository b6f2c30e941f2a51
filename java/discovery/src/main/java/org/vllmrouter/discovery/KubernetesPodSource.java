package org.vllmrouter.discovery;

import io.fabric8.kubernetes.api.model.ListOptions;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodList;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.dsl.FilterWatchListDeletable;
import io.fabric8.kubernetes.client.dsl.PodResource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Workers from Kubernetes pods: list the pods (one namespace or all), make the registry match the list, then watch
 * from the list's resource version. Any end of the watch (an error, the API server going away, a 410 Gone) leads to
 * a new list after a back-off of 1 s doubling to 300 s, reset by every successful list; so every reconnection
 * reconciles, and pods that vanished meanwhile are removed. A DELETED event always removes the pod's worker, with
 * or without an earlier deletion timestamp. Events only record what is wanted; the health waits run in the
 * {@link WorkerReconciler}, so no pod waits for another.
 */
final class KubernetesPodSource implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(KubernetesPodSource.class.getName());
    private static final long PAGE_SIZE = 500;

    private final KubernetesClient client;
    private final String namespace;
    private final PodRules rules;
    private final WorkerReconciler workers;
    private final ScheduledExecutorService loop;
    private final Backoff backoff = new Backoff();
    /** The pods that are workers now, by namespace/name. */
    private final Map<String, Endpoint> workerPods = new HashMap<>();
    /** Which list-and-watch round current events belong to; events of an older watch are ignored. */
    private int round;
    private Watch watch;
    private boolean failing;
    private volatile boolean closed;

    /** {@code namespace} null = all namespaces. */
    KubernetesPodSource(KubernetesClient client, String namespace, PodRules rules, WorkerReconciler workers) {
        this.client = client;
        this.namespace = namespace;
        this.rules = rules;
        this.workers = workers;
        this.loop = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "vllm-router-k8s-discovery");
            t.setDaemon(true);
            return t;
        });
    }

    void start() {
        for (String problem : rules.selectorProblems()) {
            LOG.warning("Kubernetes discovery: " + problem);
        }
        loop.execute(this::checkNamespace);
        loop.execute(this::listAndWatch);
    }

    private FilterWatchListDeletable<Pod, PodList, PodResource> pods() {
        return namespace == null ? client.pods().inAnyNamespace() : client.pods().inNamespace(namespace);
    }

    private void checkNamespace() {
        if (namespace == null) {
            return;
        }
        try {
            if (client.namespaces().withName(namespace).get() == null) {
                LOG.warning("Kubernetes discovery: namespace '" + namespace + "' does not exist; no pod will be found"
                        + " until it is created");
            }
        } catch (KubernetesClientException e) {
            // Reading namespaces may not be allowed to the router's service account; the pod list says the rest.
            LOG.log(Level.FINE, "Could not check namespace " + namespace, e);
        }
    }

    private void listAndWatch() {
        if (closed) {
            return;
        }
        List<Pod> pods = new ArrayList<>();
        String resourceVersion;
        try {
            String next = null;
            PodList page;
            do {
                page = pods().list(new ListOptionsBuilder().withLimit(PAGE_SIZE).withContinue(next).build());
                pods.addAll(page.getItems());
                next = page.getMetadata().getContinue();
            } while (next != null && !next.isEmpty());
            resourceVersion = page.getMetadata().getResourceVersion();
        } catch (KubernetesClientException e) {
            retryLater("listing pods failed", e);
            return;
        }
        int current;
        synchronized (this) {
            current = ++round;
            reconcile(pods);
        }
        ListOptions from = new ListOptionsBuilder().withResourceVersion(resourceVersion)
                .withAllowWatchBookmarks(true).build();
        Watch started;
        try {
            started = pods().watch(from, new PodWatcher(current));
        } catch (KubernetesClientException e) {
            retryLater("watching pods failed", e);
            return;
        }
        synchronized (this) {
            watch = started;
            if (failing) {
                LOG.info("Kubernetes discovery: pod watch resumed (" + pods.size() + " pods listed)");
                failing = false;
            }
        }
        backoff.reset();
        if (closed) {
            started.close();
        }
    }

    /** Makes the wanted workers match a complete list of pods. */
    private void reconcile(List<Pod> pods) {
        Set<String> listed = new HashSet<>();
        for (Pod pod : pods) {
            listed.add(PodRules.name(pod));
            apply(pod);
        }
        for (String key : List.copyOf(workerPods.keySet())) {
            if (!listed.contains(key)) {
                forget(key);
            }
        }
    }

    private void apply(Pod pod) {
        String key = PodRules.name(pod);
        Endpoint now = rules.workerOf(pod);
        if (now == null) {
            forget(key);
            return;
        }
        Endpoint before = workerPods.put(key, now);
        if (before != null && !before.url().equals(now.url())) {
            release(before.url());
        }
        workers.want(now);
    }

    private void forget(String key) {
        Endpoint before = workerPods.remove(key);
        if (before != null) {
            release(before.url());
        }
    }

    /** No pod of {@code url} is wanted any more, unless another pod now has the same address. */
    private void release(String url) {
        for (Endpoint other : workerPods.values()) {
            if (other.url().equals(url)) {
                workers.want(other);
                return;
            }
        }
        workers.unwant(url);
    }

    private synchronized void retryLater(String what, Throwable error) {
        if (closed) {
            return;
        }
        round++;
        failing = true;
        Duration delay = backoff.next();
        LOG.warning("Kubernetes discovery: " + what + " (" + describe(error) + "); listing again in "
                + delay.toSeconds() + " s");
        loop.schedule(this::listAndWatch, delay.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static String describe(Throwable error) {
        if (error == null) {
            return "closed by the API server";
        }
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = error.getMessage();
        return root == error || message == null ? String.valueOf(root) : message + ": " + root;
    }

    private final class PodWatcher implements Watcher<Pod> {
        private final int watchRound;

        PodWatcher(int watchRound) {
            this.watchRound = watchRound;
        }

        @Override
        public void eventReceived(Action action, Pod pod) {
            synchronized (KubernetesPodSource.this) {
                if (closed || watchRound != round) {
                    return;
                }
                switch (action) {
                    case ADDED, MODIFIED -> apply(pod);
                    case DELETED -> forget(PodRules.name(pod));
                    default -> {
                    }
                }
            }
        }

        @Override
        public void onClose(WatcherException cause) {
            ended(cause);
        }

        @Override
        public void onClose() {
            ended(null);
        }

        private void ended(Throwable cause) {
            synchronized (KubernetesPodSource.this) {
                if (closed || watchRound != round) {
                    return;
                }
            }
            retryLater("pod watch ended", cause);
        }
    }

    @Override
    public void close() {
        Watch open;
        synchronized (this) {
            closed = true;
            open = watch;
        }
        loop.shutdownNow();
        if (open != null) {
            open.close();
        }
        client.close();
    }
}
