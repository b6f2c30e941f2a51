package org.vllmrouter.discovery;

import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.io.IOException;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * What the discovery tests feed a router: pods in a mock Kubernetes API server and vLLM's ZMQ registrations. Shared
 * with the router's end-to-end discovery test through this module's test jar.
 */
public final class DiscoveryFixtures {
    /** The namespace every pod of these tests lives in. */
    public static final String NAMESPACE = "inference";

    private DiscoveryFixtures() {
    }

    /** A mock API server that keeps what it is sent (CRUD), on loopback {@code port} (0: any), with the namespace. */
    public static KubernetesMockServer apiServer(int port) throws IOException {
        KubernetesMockServer server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
                new KubernetesCrudDispatcher(), false);
        server.init(InetAddress.getLoopbackAddress(), port);
        try (KubernetesClient admin = server.createClient()) {
            admin.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(NAMESPACE).endMetadata()
                    .build()).create();
        }
        return server;
    }

    /** A running pod with one container; {@code ready} is its Ready condition. */
    public static Pod pod(String name, Map<String, String> labels, String ip, boolean ready) {
        return new PodBuilder()
                .withNewMetadata().withName(name).withNamespace(NAMESPACE).withLabels(labels).endMetadata()
                .withNewSpec().addNewContainer().withName("vllm").withImage("vllm").endContainer().endSpec()
                .withNewStatus().withPhase("Running").withPodIP(ip)
                .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition()
                .endStatus().build();
    }

    public static void create(KubernetesClient admin, Pod pod) {
        admin.pods().inNamespace(NAMESPACE).resource(pod).create();
    }

    /** Replaces the pod of the same name, as a controller's update would. */
    public static void replace(KubernetesClient admin, Pod pod) {
        Pod current = admin.pods().inNamespace(NAMESPACE).withName(pod.getMetadata().getName()).get();
        pod.getMetadata().setResourceVersion(current.getMetadata().getResourceVersion());
        admin.pods().inNamespace(NAMESPACE).resource(pod).update();
    }

    /** A registration as vLLM's connector sends it: a msgpack map of these fields (string or int values). */
    public static byte[] registration(Map<String, Object> fields) throws IOException {
        try (MessageBufferPacker packer = MessagePack.newDefaultBufferPacker()) {
            packer.packMapHeader(fields.size());
            for (Map.Entry<String, Object> field : fields.entrySet()) {
                packer.packString(field.getKey());
                if (field.getValue() instanceof String s) {
                    packer.packString(s);
                } else {
                    packer.packInt((Integer) field.getValue());
                }
            }
            return packer.toByteArray();
        }
    }

    /** A well-formed registration of a prefill ({@code P}) or decode ({@code D}) instance. */
    public static byte[] registration(String type, String httpAddress) throws IOException {
        return registration(Map.of("type", type, "http_address", httpAddress, "zmq_address", "127.0.0.1:21001"));
    }
}
