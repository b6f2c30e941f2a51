package org.vllmrouter.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.settings.DiscoverySettings;
import org.vllmrouter.core.worker.WorkerRole;

class PodRulesTest {
    private static PodRules rules(String json) throws Exception {
        return new PodRules(DiscoverySettings.from(RouterConfig.fromJson(json)));
    }

    private static final String REGULAR = "{\"service_discovery\": true, \"selector\": {\"app\": \"vllm\", \"tier\": \"gpu\"},"
            + " \"service_discovery_port\": 8000}";
    private static final String PD = "{\"service_discovery\": true, \"vllm_pd_disaggregation\": true,"
            + " \"prefill_selector\": {\"role\": \"p\"}, \"decode_selector\": {\"app\": \"vllm\"}}";

    @Test
    void regularModeNeedsEverySelectorPairAndAReadyRunningPodWithAnIp() throws Exception {
        PodRules r = rules(REGULAR);
        Map<String, String> labels = Map.of("app", "vllm", "tier", "gpu", "other", "x");
        assertEquals(new Endpoint("http://10.1.2.3:8000", WorkerRole.REGULAR, null),
                r.workerOf(DiscoveryFixtures.pod("a", labels, "10.1.2.3", true)));
        assertNull(r.workerOf(DiscoveryFixtures.pod("a", Map.of("app", "vllm"), "10.1.2.3", true)));
        assertNull(r.workerOf(DiscoveryFixtures.pod("a", labels, "10.1.2.3", false)));
        assertNull(r.workerOf(DiscoveryFixtures.pod("a", null, "10.1.2.3", true)));

        Pod pending = DiscoveryFixtures.pod("a", labels, "10.1.2.3", true);
        pending.getStatus().setPhase("Pending");
        assertNull(r.workerOf(pending));
        Pod noIp = DiscoveryFixtures.pod("a", labels, "", true);
        assertNull(r.workerOf(noIp));
        Pod noConditions = DiscoveryFixtures.pod("a", labels, "10.1.2.3", true);
        noConditions.getStatus().setConditions(List.of());
        assertNull(r.workerOf(noConditions));
        Pod deleting = DiscoveryFixtures.pod("a", labels, "10.1.2.3", true);
        deleting.getMetadata().setDeletionTimestamp("2026-01-01T00:00:00Z");
        assertNull(r.workerOf(deleting));
        assertEquals("http://[fd00::1]:8000",
                r.workerOf(DiscoveryFixtures.pod("a", labels, "fd00::1", true)).url());
    }

    @Test
    void pdModeChecksThePrefillSelectorFirstAndReadsTheBootstrapPort() throws Exception {
        PodRules r = rules(PD);
        Pod both = DiscoveryFixtures.pod("a", Map.of("role", "p", "app", "vllm"), "10.0.0.1", true);
        assertEquals(new Endpoint("http://10.0.0.1:80", WorkerRole.PREFILL, null), r.workerOf(both));
        both.getMetadata().setAnnotations(Map.of("vllm.ai/bootstrap-port", " 8998 "));
        assertEquals(8998, r.workerOf(both).bootstrapPort());
        for (String bad : List.of("0", "65536", "x", "")) {
            both.getMetadata().setAnnotations(Map.of("vllm.ai/bootstrap-port", bad));
            assertNull(r.workerOf(both), bad);
        }
        Pod decode = DiscoveryFixtures.pod("d", Map.of("app", "vllm"), "10.0.0.2", true);
        decode.getMetadata().setAnnotations(Map.of("vllm.ai/bootstrap-port", "x"));
        assertEquals(new Endpoint("http://10.0.0.2:80", WorkerRole.DECODE, null), r.workerOf(decode));
    }

    @Test
    void anEmptySelectorMatchesNothing() throws Exception {
        PodRules r = rules("{\"service_discovery\": true, \"vllm_pd_disaggregation\": true,"
                + " \"decode_selector\": {\"app\": \"vllm\"}}");
        assertEquals(WorkerRole.DECODE,
                r.workerOf(DiscoveryFixtures.pod("a", Map.of("app", "vllm"), "10.0.0.1", true)).role());
        assertNull(r.workerOf(DiscoveryFixtures.pod("a", Map.of("x", "y"), "10.0.0.1", true)));
        assertEquals(List.of("--prefill-selector is empty: no pod will be a prefill worker"), r.selectorProblems());
    }

    @Test
    void selectorPairsOutsideTheLabelSyntaxAreReported() throws Exception {
        PodRules r = rules("{\"service_discovery\": true, \"selector\": {\"app.kubernetes.io/name\": \"vllm\","
                + " \"tier\": \"\", \"-bad\": \"x\", \"ok\": \"no spaces\", \"Bad.Prefix/x\": \"y\"}}");
        List<String> problems = r.selectorProblems();
        assertEquals(3, problems.size(), problems::toString);
        assertEquals(true, problems.contains("--selector -bad=x can never match a pod: '-bad' is not a valid label key"));
        assertEquals(true, problems.contains("--selector ok=no spaces can never match a pod: 'no spaces' is not a valid label value"));
        assertEquals(true, problems.contains("--selector Bad.Prefix/x=y can never match a pod: 'Bad.Prefix/x' is not a valid label key"));
    }
}
