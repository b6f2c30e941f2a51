package org.vllmrouter.discovery;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Supplier;
import java.util.logging.Logger;
import org.vllmrouter.core.settings.DiscoverySettings;

/**
 * The worker sources a configuration asks for, running: Kubernetes pods ({@code --service-discovery}) and vLLM's ZMQ
 * registrations ({@code --vllm-discovery-address}, PD mode). Both feed the {@link WorkerSink}; see
 * docs/architecture.md, 'Worker sources and transport'.
 */
public final class WorkerDiscovery implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(WorkerDiscovery.class.getName());

    private final ScheduledExecutorService timer;
    private final List<AutoCloseable> running = new ArrayList<>();

    private WorkerDiscovery(ScheduledExecutorService timer) {
        this.timer = timer;
    }

    /** Whether {@code config} has workers come and go by discovery (so none at start is normal, not "all healthy"). */
    public static boolean discoversWorkers(DiscoverySettings config) {
        return config.serviceDiscovery() || (config.vllmDiscoveryAddress() != null && config.pdMode());
    }

    /**
     * Starts the sources {@code config} names; their metrics go into {@code registry}. The Kubernetes client finds
     * the API server as kubectl does ({@code KUBECONFIG}, {@code ~/.kube/config}, else the in-cluster service
     * account). An API server that cannot be reached is retried in the background; the router serves meanwhile.
     *
     * @throws DiscoveryStartException when the ZMQ address cannot be bound
     */
    public static WorkerDiscovery start(DiscoverySettings config, WorkerSink sink, PrometheusRegistry registry)
            throws DiscoveryStartException {
        return start(config, sink, registry, WorkerDiscovery::kubernetesClient);
    }

    static WorkerDiscovery start(DiscoverySettings config, WorkerSink sink, PrometheusRegistry registry,
                                 Supplier<KubernetesClient> clients) throws DiscoveryStartException {
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "vllm-router-discovery");
            t.setDaemon(true);
            return t;
        });
        WorkerDiscovery discovery = new WorkerDiscovery(timer);
        if (!config.serviceDiscovery() && config.vllmDiscoveryAddress() == null) {
            return discovery;
        }
        DiscoveryMetrics metrics = new DiscoveryMetrics(registry);
        Duration retry = Duration.ofSeconds(Math.max(1, config.retryIntervalSecs()));
        try {
            if (config.serviceDiscovery()) {
                WorkerReconciler workers = discovery.track(new WorkerReconciler(sink, metrics, timer, retry));
                KubernetesPodSource pods = discovery.track(new KubernetesPodSource(clients.get(),
                        config.namespace(), new PodRules(config), workers));
                pods.start();
                LOG.info("Kubernetes discovery: watching pods in " + (config.namespace() == null
                        ? "all namespaces" : "namespace " + config.namespace()));
            }
            if (config.vllmDiscoveryAddress() != null) {
                if (config.pdMode()) {
                    WorkerReconciler workers = discovery.track(new WorkerReconciler(sink, metrics, timer, retry));
                    discovery.track(ZmqRegistrationSource.start(config.vllmDiscoveryAddress(), workers));
                } else {
                    LOG.warning("--vllm-discovery-address only applies to PD mode (--vllm-pd-disaggregation); "
                            + "ignored");
                }
            }
        } catch (DiscoveryStartException | RuntimeException e) {
            discovery.close();
            throw e;
        }
        return discovery;
    }

    private <T extends AutoCloseable> T track(T source) {
        running.add(source);
        return source;
    }

    private static KubernetesClient kubernetesClient() {
        return client(Config.autoConfigure(null));
    }

    /** A client for {@code found}'s API server, with reconnection left to {@link KubernetesPodSource}'s back-off. */
    static KubernetesClient client(Config found) {
        Config config = new ConfigBuilder(found)
                .withWatchReconnectLimit(0)
                .withRequestRetryBackoffLimit(0)
                .build();
        return new KubernetesClientBuilder().withConfig(config).build();
    }

    /** Stops every source (sockets, watches, health waits); workers they registered stay registered. */
    @Override
    public void close() {
        for (int i = running.size() - 1; i >= 0; i--) {
            try {
                running.get(i).close();
            } catch (Exception e) {
                LOG.warning("Stopping worker discovery: " + e);
            }
        }
        running.clear();
        timer.shutdownNow();
    }
}
