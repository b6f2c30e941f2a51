package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vllmrouter.discovery.DiscoveryFixtures.NAMESPACE;
import static org.vllmrouter.discovery.DiscoveryFixtures.create;
import static org.vllmrouter.discovery.DiscoveryFixtures.pod;
import static org.vllmrouter.discovery.DiscoveryFixtures.registration;
import static org.vllmrouter.discovery.DiscoveryFixtures.replace;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.vllmrouter.discovery.DiscoveryFixtures;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Workers that come and go by discovery, end to end: a router finds them through a Kubernetes API server
 * (kubernetes-server-mock in CRUD mode, reached through a kubeconfig file as kubectl would) or through vLLM's ZMQ
 * registrations, waits for their health, and routes real requests to mock vLLM workers. Pods get loopback IPs
 * (127.0.0.1, 127.0.0.2, ...) so that every pod's {@code http://<podIP>:<port>} is a mock worker on the one port.
 */
@ExtendWith(NoLeaks.class)
class DiscoveryTest {
    private static final Map<String, String> VLLM = Map.of("app", "vllm");

    @TempDir
    Path dir;
    private final List<AutoCloseable> open = new ArrayList<>();
    private KubernetesMockServer apiServer;
    private KubernetesClient admin;
    private MockWorkers first;
    private int port;

    @BeforeEach
    void start() throws Exception {
        first = MockWorkers.start(MockConfig.builder().host("127.0.0.1").count(1).build());
        port = first.ports().get(0);
    }

    @AfterEach
    void stop() throws Exception {
        // The API server goes first, as in the outage test: its shutdown waits for a watch that a client is closing.
        if (apiServer != null) {
            admin.close();
            apiServer.destroy();
        }
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
        first.close();
        System.clearProperty("kubeconfig");
    }

    /** A mock vLLM worker at {@code host} on the shared port. */
    private MockWorkers workerAt(String host) {
        MockWorkers w = MockWorkers.start(MockConfig.builder().host(host).ports(List.of(port)).build());
        open.add(w);
        return w;
    }

    private void apiServerOn(int apiPort) throws Exception {
        apiServer = DiscoveryFixtures.apiServer(apiPort);
        admin = apiServer.createClient();
        Path kubeconfig = dir.resolve("kubeconfig");
        Files.writeString(kubeconfig, """
                apiVersion: v1
                kind: Config
                clusters:
                - name: mock
                  cluster:
                    server: %s
                contexts:
                - name: mock
                  context:
                    cluster: mock
                    user: tester
                current-context: mock
                users:
                - name: tester
                  user:
                    token: not-checked
                """.formatted(apiServer.url("/").replaceAll("/$", "")));
        System.setProperty("kubeconfig", kubeconfig.toString());
    }

    private RouterServer router(Map<String, Object> fields) throws Exception {
        RouterServer router = Fixture.start(fields);
        open.add(router);
        return router;
    }

    private Map<String, Object> kubernetes(Map<String, Object> extra) {
        Map<String, Object> cfg = Fixture.base(List.of());
        cfg.put("service_discovery", true);
        cfg.put("service_discovery_port", port);
        cfg.put("service_discovery_namespace", NAMESPACE);
        cfg.putAll(extra);
        return cfg;
    }



    private static List<String> workers(RouterServer router) throws Exception {
        List<String> urls = new ArrayList<>();
        TestHttp.json(TestHttp.get(router.url() + "/list_workers")).get("urls").forEach(u -> urls.add(u.asText()));
        return urls;
    }

    private static void awaitWorkers(RouterServer router, List<String> expected) throws Exception {
        await("workers " + expected, () -> {
            try {
                return new java.util.HashSet<>(workers(router)).equals(new java.util.HashSet<>(expected));
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** Waits for a state discovery reaches on its own; never a timing assertion. */
    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not reached within 60 s: " + what);
            }
            Thread.sleep(20);
        }
    }

    private String url(String host) {
        return "http://" + host + ":" + port;
    }

    private static HttpResponse<String> chat(RouterServer router, String session, String content) throws Exception {
        return TestHttp.post(router.url() + "/v1/chat/completions", TestHttp.chat("m", content), "X-Session-ID", session);
    }

    @Test
    void aReadyPodIsRoutedToAndLeavesOnIpChangeRelabelAndDelete() throws Exception {
        MockWorkers second = workerAt("127.0.0.2");
        apiServerOn(0);
        RouterServer router = router(kubernetes(Map.of("selector", VLLM)));

        // Nothing found yet: not healthy (0.1.17 said "All servers healthy" and then answered 503).
        HttpResponse<String> health = TestHttp.get(router.url() + "/health");
        assertEquals(503, health.statusCode());
        assertEquals("No workers discovered yet", health.body());
        assertEquals(503, chat(router, "s1", "nobody there").statusCode());

        create(admin, pod("vllm-0", VLLM, "127.0.0.1", false));
        create(admin, pod("web-0", Map.of("app", "web"), "127.0.0.2", true));
        replace(admin, pod("vllm-0", VLLM, "127.0.0.1", true));
        awaitWorkers(router, List.of(url("127.0.0.1")));
        assertEquals(200, TestHttp.get(router.url() + "/health").statusCode());
        HttpResponse<String> answer = chat(router, "s1", "first turn");
        assertEquals(200, answer.statusCode(), answer.body());
        assertEquals(1, first.worker(0).captured("/v1/chat/completions").size());

        // The pod moves to another IP: the old worker goes, the new one comes, and the session re-binds there.
        replace(admin, pod("vllm-0", VLLM, "127.0.0.2", true));
        awaitWorkers(router, List.of(url("127.0.0.2")));
        assertEquals(200, chat(router, "s1", "second turn").statusCode());
        assertEquals(1, second.worker(0).captured("/v1/chat/completions").size());
        assertEquals(Map.of(url("127.0.0.2"), 1), router.sessionStats().activeByWorker());

        replace(admin, pod("vllm-0", Map.of("app", "other"), "127.0.0.2", true));
        awaitWorkers(router, List.of());
        assertEquals(503, TestHttp.get(router.url() + "/health").statusCode());

        replace(admin, pod("vllm-0", VLLM, "127.0.0.2", true));
        awaitWorkers(router, List.of(url("127.0.0.2")));
        admin.pods().inNamespace(NAMESPACE).withName("vllm-0").delete();
        awaitWorkers(router, List.of());

        String metrics = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
        assertTrue(metrics.contains("vllm_router_discovery_updates_total 6.0"), metrics);
        assertTrue(metrics.contains("vllm_router_discovery_workers_removed 1.0"), metrics);
    }

    @Test
    void podsGoneWhileTheApiServerWasDownAreRemovedWhenItComesBack() throws Exception {
        workerAt("127.0.0.2");
        apiServerOn(0);
        RouterServer router = router(kubernetes(Map.of("selector", VLLM)));
        create(admin, pod("a", VLLM, "127.0.0.1", true));
        create(admin, pod("b", VLLM, "127.0.0.2", true));
        awaitWorkers(router, List.of(url("127.0.0.1"), url("127.0.0.2")));

        int apiPort = apiServer.getPort();
        admin.close();
        apiServer.destroy();
        apiServer = null;
        assertEquals(200, chat(router, "during-outage", "still served").statusCode());

        apiServerOn(apiPort);
        create(admin, pod("b", VLLM, "127.0.0.2", true));
        awaitWorkers(router, List.of(url("127.0.0.2")));
        assertEquals(200, chat(router, "after", "back").statusCode());
    }

    @Test
    void aPodThatNeverAnswersHoldsUpNoOtherAndJoinsOnceItDoes() throws Exception {
        apiServerOn(0);
        RouterServer router = router(kubernetes(Map.of("selector", VLLM, "worker_startup_timeout_secs", 1)));
        // Nothing listens at 127.0.0.3 yet.
        create(admin, pod("slow", VLLM, "127.0.0.3", true));
        create(admin, pod("fine", VLLM, "127.0.0.1", true));
        awaitWorkers(router, List.of(url("127.0.0.1")));

        workerAt("127.0.0.3");
        awaitWorkers(router, List.of(url("127.0.0.1"), url("127.0.0.3")));
    }

    @Test
    void pdSelectorsMakePrefillAndDecodeWorkers() throws Exception {
        workerAt("127.0.0.2");
        apiServerOn(0);
        RouterServer router = router(kubernetes(Map.of("vllm_pd_disaggregation", true,
                "prefill_selector", Map.of("role", "prefill"), "decode_selector", Map.of("role", "decode"))));
        Pod prefill = pod("prefill-0", Map.of("role", "prefill"), "127.0.0.1", true);
        prefill.getMetadata().setAnnotations(Map.of("vllm.ai/bootstrap-port", "8998"));
        create(admin, prefill);
        create(admin, pod("decode-0", Map.of("role", "decode"), "127.0.0.2", true));
        awaitWorkers(router, List.of(url("127.0.0.1"), url("127.0.0.2")));

        JsonNode listed = TestHttp.json(TestHttp.get(router.url() + "/workers"));
        assertEquals(1, listed.get("stats").get("prefill_count").asInt(), listed.toString());
        assertEquals(1, listed.get("stats").get("decode_count").asInt(), listed.toString());
        for (JsonNode w : listed.get("workers")) {
            if (w.get("worker_type").asText().equals("prefill")) {
                assertEquals(url("127.0.0.1"), w.get("url").asText());
                assertEquals(8998, w.get("bootstrap_port").asInt());
            }
        }
        HttpResponse<String> answer = chat(router, "pd", "two stages");
        assertEquals(200, answer.statusCode(), answer.body());
    }


    @Test
    void vllmInstancesRegisterOverZmqAndExpireWhenTheyStopHeartbeating() throws Exception {
        workerAt("127.0.0.2");
        int zmqPort;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            zmqPort = probe.getLocalPort();
        }
        Map<String, Object> cfg = Fixture.base(List.of());
        cfg.put("vllm_pd_disaggregation", true);
        cfg.put("vllm_discovery_address", "127.0.0.1:" + zmqPort);
        RouterServer router = router(cfg);

        byte[] prefill = registration("P", "127.0.0.1:" + port);
        byte[] decode = registration("D", "127.0.0.2:" + port);
        ScheduledExecutorService heartbeats = Executors.newSingleThreadScheduledExecutor();
        try (ZContext zmq = new ZContext()) {
            ZMQ.Socket dealer = zmq.createSocket(SocketType.DEALER);
            dealer.setLinger(0);
            dealer.connect("tcp://127.0.0.1:" + zmqPort);
            // vLLM's connectors send their registration again every few seconds; the socket stays on one thread.
            heartbeats.scheduleAtFixedRate(() -> {
                dealer.send(prefill);
                dealer.send(decode);
            }, 0, 1, TimeUnit.SECONDS);
            awaitWorkers(router, List.of(url("127.0.0.1"), url("127.0.0.2")));
            HttpResponse<String> answer = chat(router, "zmq", "registered");
            assertEquals(200, answer.statusCode(), answer.body());
            assertEquals(1, first.worker(0).captured("/v1/chat/completions").size());

            heartbeats.shutdown();
            assertTrue(heartbeats.awaitTermination(10, TimeUnit.SECONDS));
            awaitWorkers(router, List.of());
            assertEquals(503, TestHttp.get(router.url() + "/health").statusCode());
        } finally {
            heartbeats.shutdownNow();
        }
    }

    @Test
    void aZmqAddressInUseIsAStartError() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Map<String, Object> cfg = Fixture.base(List.of());
            cfg.put("vllm_pd_disaggregation", true);
            cfg.put("vllm_discovery_address", "127.0.0.1:" + taken.getLocalPort());
            RouterStartException e = assertThrows(RouterStartException.class, () -> Fixture.start(cfg));
            assertTrue(e.getMessage().startsWith("Failed to bind the vLLM discovery address 127.0.0.1:"
                    + taken.getLocalPort()), e.getMessage());
        }
    }
}
