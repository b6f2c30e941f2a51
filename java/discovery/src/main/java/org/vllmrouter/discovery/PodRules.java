package org.vllmrouter.discovery;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.PodStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import org.vllmrouter.core.settings.DiscoverySettings;
import org.vllmrouter.core.worker.WorkerRole;

/**
 * Which pods are workers, as upstream decides it: the pod's labels contain every pair of the selector (in PD mode
 * the prefill selector is checked first, then the decode selector; an empty selector matches nothing), its phase is
 * Running, its Ready condition is True, it has an IP and no deletion timestamp. The worker's URL is
 * {@code http://<podIP>:<port>} (an IPv6 address in brackets); a prefill pod's bootstrap port comes from the
 * bootstrap-port annotation.
 */
final class PodRules {
    private static final Logger LOG = Logger.getLogger(PodRules.class.getName());
    private static final Pattern LABEL_NAME = Pattern.compile("[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?");
    private static final Pattern DNS_SUBDOMAIN = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

    private final boolean pdMode;
    private final Map<String, String> selector;
    private final Map<String, String> prefillSelector;
    private final Map<String, String> decodeSelector;
    private final int port;
    private final String bootstrapPortAnnotation;

    PodRules(DiscoverySettings config) {
        this.pdMode = config.pdMode();
        this.selector = config.selector();
        this.prefillSelector = config.prefillSelector();
        this.decodeSelector = config.decodeSelector();
        this.port = config.port();
        this.bootstrapPortAnnotation = config.bootstrapPortAnnotation();
    }

    /** The worker {@code pod} is, or null when it is not one (now). */
    Endpoint workerOf(Pod pod) {
        WorkerRole role = roleOf(pod.getMetadata().getLabels());
        if (role == null || pod.getMetadata().getDeletionTimestamp() != null || !isReady(pod.getStatus())) {
            return null;
        }
        String ip = pod.getStatus().getPodIP();
        String host = ip.contains(":") ? "[" + ip + "]" : ip;
        String url = "http://" + host + ":" + port;
        if (role != WorkerRole.PREFILL) {
            return new Endpoint(url, role, null);
        }
        Map<String, String> annotations = pod.getMetadata().getAnnotations();
        String value = annotations == null ? null : annotations.get(bootstrapPortAnnotation);
        if (value == null) {
            return new Endpoint(url, role, null);
        }
        Integer bootstrapPort = parsePort(value.trim());
        if (bootstrapPort == null) {
            LOG.warning("Pod " + name(pod) + ": annotation " + bootstrapPortAnnotation + "='" + value
                    + "' is not a port number (1-65535); the pod is skipped");
            return null;
        }
        return new Endpoint(url, role, bootstrapPort);
    }

    /**
     * Selector pairs no pod can ever match (a key or value outside Kubernetes' label syntax), and empty selectors
     * that match nothing, as one-line messages for the start-up log.
     */
    List<String> selectorProblems() {
        List<String> problems = new ArrayList<>();
        if (pdMode) {
            check("--prefill-selector", prefillSelector, problems);
            check("--decode-selector", decodeSelector, problems);
            if (prefillSelector.isEmpty()) {
                problems.add("--prefill-selector is empty: no pod will be a prefill worker");
            }
            if (decodeSelector.isEmpty()) {
                problems.add("--decode-selector is empty: no pod will be a decode worker");
            }
        } else {
            check("--selector", selector, problems);
        }
        return problems;
    }

    private WorkerRole roleOf(Map<String, String> labels) {
        Map<String, String> have = labels == null ? Map.of() : labels;
        if (!pdMode) {
            return matches(selector, have) ? WorkerRole.REGULAR : null;
        }
        if (matches(prefillSelector, have)) {
            return WorkerRole.PREFILL;
        }
        return matches(decodeSelector, have) ? WorkerRole.DECODE : null;
    }

    private static boolean matches(Map<String, String> wanted, Map<String, String> labels) {
        if (wanted.isEmpty()) {
            return false;
        }
        for (Map.Entry<String, String> pair : wanted.entrySet()) {
            if (!pair.getValue().equals(labels.get(pair.getKey()))) {
                return false;
            }
        }
        return true;
    }

    private static boolean isReady(PodStatus status) {
        if (status == null || !"Running".equals(status.getPhase())) {
            return false;
        }
        if (status.getPodIP() == null || status.getPodIP().isEmpty()) {
            return false;
        }
        if (status.getConditions() == null) {
            return false;
        }
        for (PodCondition condition : status.getConditions()) {
            if ("Ready".equals(condition.getType())) {
                return "True".equals(condition.getStatus());
            }
        }
        return false;
    }

    private static Integer parsePort(String value) {
        try {
            int p = Integer.parseInt(value);
            return p >= 1 && p <= 65535 ? p : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static void check(String flag, Map<String, String> pairs, List<String> problems) {
        for (Map.Entry<String, String> pair : pairs.entrySet()) {
            String reason = !isLabelKey(pair.getKey()) ? "'" + pair.getKey() + "' is not a valid label key"
                    : !pair.getValue().isEmpty() && !LABEL_NAME.matcher(pair.getValue()).matches()
                    ? "'" + pair.getValue() + "' is not a valid label value" : null;
            if (reason != null) {
                problems.add(flag + " " + pair.getKey() + "=" + pair.getValue() + " can never match a pod: " + reason);
            }
        }
    }

    private static boolean isLabelKey(String key) {
        int slash = key.indexOf('/');
        String name = slash < 0 ? key : key.substring(slash + 1);
        if (slash >= 0) {
            String prefix = key.substring(0, slash);
            if (prefix.isEmpty() || prefix.length() > 253 || !DNS_SUBDOMAIN.matcher(prefix).matches()) {
                return false;
            }
        }
        return LABEL_NAME.matcher(name).matches();
    }

    static String name(Pod pod) {
        String namespace = pod.getMetadata().getNamespace();
        return (namespace == null ? "" : namespace + "/") + pod.getMetadata().getName();
    }
}
