package org.vllmrouter.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vllmrouter.discovery.DiscoveryFixtures.NAMESPACE;
import static org.vllmrouter.discovery.DiscoveryFixtures.apiServer;
import static org.vllmrouter.discovery.DiscoveryFixtures.create;
import static org.vllmrouter.discovery.DiscoveryFixtures.pod;
import static org.vllmrouter.discovery.DiscoveryFixtures.replace;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.settings.DiscoverySettings;
import org.vllmrouter.core.worker.WorkerRole;

/** Pod discovery against a real (in-process) Kubernetes API server: kubernetes-server-mock in CRUD mode. */
class KubernetesPodSourceTest {
    /** Held so that its INFO level stays set (the logging configuration keeps WARNING). */
    private static final Logger DISCOVERY_LOG = Logger.getLogger("org.vllmrouter.discovery");

    private KubernetesMockServer server;
    private KubernetesClient admin;
    private final RecordingSink sink = new RecordingSink();
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final List<String> warnings = new ArrayList<>();
    private final Handler capture = new Handler() {
        @Override
        public void publish(LogRecord record) {
            synchronized (warnings) {
                warnings.add(record.getMessage());
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };
    private WorkerDiscovery discovery;

    @BeforeEach
    void startApiServer() throws Exception {
        server = apiServer(0);
        admin = server.createClient();
        DISCOVERY_LOG.setLevel(Level.INFO);
        DISCOVERY_LOG.addHandler(capture);
    }

    @AfterEach
    void stop() {
        DISCOVERY_LOG.removeHandler(capture);
        // The API server goes first: its shutdown waits for a watch that a closing client may leave half-closed.
        admin.close();
        server.destroy();
        if (discovery != null) {
            discovery.close();
        }
    }


    private void discover(String json) throws Exception {
        DiscoverySettings config = DiscoverySettings.from(RouterConfig.fromJson(json));
        Config apiServer = new ConfigBuilder(Config.empty()).withMasterUrl(server.url("/")).withNamespace(NAMESPACE).build();
        discovery = WorkerDiscovery.start(config, sink, registry, () -> WorkerDiscovery.client(apiServer));
    }



    private void awaitWorkers(Map<String, WorkerRole> expected) {
        Eventually.await("workers " + expected, () -> roles().equals(expected), this::roles);
    }

    private Map<String, WorkerRole> roles() {
        Map<String, WorkerRole> out = new HashMap<>();
        sink.registered.forEach((url, endpoint) -> out.put(url, endpoint.role()));
        return out;
    }

    private static final Map<String, String> VLLM = Map.of("app", "vllm");

    @Test
    void podBecomesAWorkerWhenReadyAndStopsBeingOneOnEveryWayOut() throws Exception {
        discover("{\"service_discovery\": true, \"selector\": {\"app\": \"vllm\"}, \"service_discovery_port\": 8000,"
                + " \"service_discovery_namespace\": \"" + NAMESPACE + "\"}");
        create(admin, pod("not-ready", VLLM, "10.0.0.1", false));
        create(admin, pod("other-app", Map.of("app", "web"), "10.0.0.9", true));
        create(admin, pod("ready", Map.of("app", "vllm", "extra", "x"), "10.0.0.2", true));
        awaitWorkers(Map.of("http://10.0.0.2:8000", WorkerRole.REGULAR));

        replace(admin, pod("not-ready", VLLM, "10.0.0.1", true));
        awaitWorkers(Map.of("http://10.0.0.2:8000", WorkerRole.REGULAR, "http://10.0.0.1:8000", WorkerRole.REGULAR));

        replace(admin, pod("not-ready", VLLM, "10.0.0.1", false));
        awaitWorkers(Map.of("http://10.0.0.2:8000", WorkerRole.REGULAR));

        replace(admin, pod("ready", Map.of("app", "web"), "10.0.0.2", true));
        awaitWorkers(Map.of());

        replace(admin, pod("ready", VLLM, "10.0.0.2", true));
        awaitWorkers(Map.of("http://10.0.0.2:8000", WorkerRole.REGULAR));
        replace(admin, pod("ready", VLLM, "10.0.0.3", true));
        awaitWorkers(Map.of("http://10.0.0.3:8000", WorkerRole.REGULAR));

        // Deleted straight away (no deletion timestamp first): 0.1.17 kept such a pod as a worker.
        admin.pods().inNamespace(NAMESPACE).withName("ready").delete();
        awaitWorkers(Map.of());

        // Four workers added, four removed, one change each.
        assertEquals(8.0, counter("vllm_router_discovery_updates_total"));
        assertEquals(0.0, gauge("vllm_router_discovery_workers_added"));
        assertEquals(1.0, gauge("vllm_router_discovery_workers_removed"));
    }

    @Test
    void podWithADeletionTimestampIsNoLongerAWorker() throws Exception {
        discover("{\"service_discovery\": true, \"selector\": {\"app\": \"vllm\"}, \"service_discovery_port\": 8000}");
        Pod leaving = pod("leaving", VLLM, "10.0.0.4", true);
        // A finalizer keeps the pod (now carrying its deletion timestamp) until someone removes it.
        leaving.getMetadata().setFinalizers(List.of("example.com/hold"));
        create(admin, leaving);
        awaitWorkers(Map.of("http://10.0.0.4:8000", WorkerRole.REGULAR));
        admin.pods().inNamespace(NAMESPACE).withName("leaving").delete();
        awaitWorkers(Map.of());
        assertTrue(admin.pods().inNamespace(NAMESPACE).withName("leaving").get().getMetadata().getDeletionTimestamp() != null);
    }

    @Test
    void pdSelectorsGiveRolesAndBootstrapPorts() throws Exception {
        discover("{\"service_discovery\": true, \"vllm_pd_disaggregation\": true, \"service_discovery_port\": 8100,"
                + " \"prefill_selector\": {\"role\": \"prefill\"}, \"decode_selector\": {\"app\": \"vllm\"}}");
        Pod prefill = pod("prefill", Map.of("role", "prefill", "app", "vllm"), "fd00::7", true);
        prefill.getMetadata().setAnnotations(Map.of("vllm.ai/bootstrap-port", "8998"));
        create(admin, prefill);
        Pod badAnnotation = pod("bad-annotation", Map.of("role", "prefill"), "10.0.1.2", true);
        badAnnotation.getMetadata().setAnnotations(Map.of("vllm.ai/bootstrap-port", "eighty"));
        create(admin, badAnnotation);
        create(admin, pod("decode", VLLM, "10.0.1.3", true));
        awaitWorkers(Map.of("http://[fd00::7]:8100", WorkerRole.PREFILL, "http://10.0.1.3:8100", WorkerRole.DECODE));
        assertEquals(8998, sink.registered.get("http://[fd00::7]:8100").bootstrapPort());
        assertEquals(null, sink.registered.get("http://10.0.1.3:8100").bootstrapPort());
        assertTrue(logged("bad-annotation: annotation vllm.ai/bootstrap-port='eighty' is not a port number"), warnings::toString);

        // The annotation fixed: the pod becomes a prefill worker.
        badAnnotation.getMetadata().setAnnotations(Map.of("vllm.ai/bootstrap-port", "9000"));
        replace(admin, badAnnotation);
        Eventually.await("fixed prefill pod", () -> sink.registered.containsKey("http://10.0.1.2:8100"));
        assertEquals(9000, sink.registered.get("http://10.0.1.2:8100").bootstrapPort());
    }

    @Test
    void anUnhealthyPodHoldsUpNoOtherAndIsRetriedInTheBackground() throws Exception {
        sink.held.add("http://10.0.2.1:8000");
        discover("{\"service_discovery\": true, \"selector\": {\"app\": \"vllm\"}, \"service_discovery_port\": 8000,"
                + " \"worker_startup_check_interval\": 1}");
        create(admin, pod("stuck", VLLM, "10.0.2.1", true));
        Eventually.await("health wait of the stuck pod", () -> sink.waiting.containsKey("http://10.0.2.1:8000"));
        create(admin, pod("fine", VLLM, "10.0.2.2", true));
        awaitWorkers(Map.of("http://10.0.2.2:8000", WorkerRole.REGULAR));

        // Its start-up wait times out; the pod is tried again while it is wanted, and joins once healthy.
        sink.held.clear();
        sink.unhealthy.add("http://10.0.2.1:8000");
        sink.waiting.remove("http://10.0.2.1:8000").complete(WorkerSink.Outcome.UNHEALTHY);
        Eventually.await("retry warning", () -> logged("10.0.2.1:8000 did not become healthy; trying again"));
        sink.unhealthy.clear();
        awaitWorkers(Map.of("http://10.0.2.1:8000", WorkerRole.REGULAR, "http://10.0.2.2:8000", WorkerRole.REGULAR));
    }

    @Test
    void podsThatVanishWhileTheApiServerIsDownAreRemovedWhenItComesBack() throws Exception {
        discover("{\"service_discovery\": true, \"selector\": {\"app\": \"vllm\"}, \"service_discovery_port\": 8000}");
        create(admin, pod("a", VLLM, "10.0.3.1", true));
        create(admin, pod("b", VLLM, "10.0.3.2", true));
        awaitWorkers(Map.of("http://10.0.3.1:8000", WorkerRole.REGULAR, "http://10.0.3.2:8000", WorkerRole.REGULAR));

        int port = server.getPort();
        admin.close();
        server.destroy();
        Eventually.await("the watch failure noticed", () -> logged("pod watch ended"), warnings::toString);

        // The API server comes back on the same address without pod b, and with a new pod c.
        server = apiServer(port);
        admin = server.createClient();
        create(admin, pod("a", VLLM, "10.0.3.1", true));
        create(admin, pod("c", VLLM, "10.0.3.3", true));
        awaitWorkers(Map.of("http://10.0.3.1:8000", WorkerRole.REGULAR, "http://10.0.3.3:8000", WorkerRole.REGULAR));
        Eventually.await("resumed", () -> logged("pod watch resumed"), warnings::toString);

        // And the new watch delivers events again.
        admin.pods().inNamespace(NAMESPACE).withName("a").delete();
        awaitWorkers(Map.of("http://10.0.3.3:8000", WorkerRole.REGULAR));
    }

    @Test
    void missingNamespaceAndMalformedSelectorAreLoggedAndDiscoveryGoesOn() throws Exception {
        discover("{\"service_discovery\": true, \"selector\": {\"app\": \"vllm\", \"bad key!\": \"x\"},"
                + " \"service_discovery_namespace\": \"nowhere\"}");
        Eventually.await("namespace warning", () -> logged("namespace 'nowhere' does not exist"), warnings::toString);
        assertTrue(logged("--selector bad key!=x can never match a pod: 'bad key!' is not a valid label key"),
                warnings::toString);
    }

    private boolean logged(String fragment) {
        synchronized (warnings) {
            return warnings.stream().anyMatch(m -> m.contains(fragment));
        }
    }

    private double counter(String name) {
        for (MetricSnapshot s : registry.scrape()) {
            if (s instanceof CounterSnapshot c && (c.getMetadata().getName() + "_total").equals(name)) {
                return c.getDataPoints().get(0).getValue();
            }
        }
        throw new AssertionError("no counter " + name);
    }

    private double gauge(String name) {
        for (MetricSnapshot s : registry.scrape()) {
            if (s instanceof GaugeSnapshot g && g.getMetadata().getName().equals(name)) {
                return g.getDataPoints().get(0).getValue();
            }
        }
        throw new AssertionError("no gauge " + name);
    }
}
