package org.vllmrouter.core.config;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import org.vllmrouter.core.session.SessionStoreUrl;

/**
 * Upstream's configuration validation (ConfigValidator), applied to the RouterArgs-shaped config in the
 * same order and with the same messages. Deviations: port 0 is accepted for the router and Prometheus
 * (it means "pick a free port"), and negative numbers, which upstream's unsigned types reject at
 * conversion time, are reported here with the field name.
 */
final class ConfigValidator {
    static final String PREFIX = "Configuration validation failed: ";
    /** Compared case-insensitively: upstream lower-cases the value before matching. */
    /** An hour: a tool call's wait, not a session's life (the idle TTL covers that). */
    private static final double MAX_TOOL_HOLD_SECS = 3600.0;
    private static final List<String> KV_CONNECTORS = ConfigContract.get().field("kv_connector").choices();

    private ConfigValidator() {
    }

    static void validate(RouterConfig c) throws ConfigException {
        validatePolicyName("policy", c.policy());
        validatePolicyName("prefill_policy", c.prefillPolicy());
        validatePolicyName("decode_policy", c.decodePolicy());
        if (!KV_CONNECTORS.contains(c.kvConnector().toLowerCase(Locale.ROOT))) {
            throw new ConfigException("Configuration error: Invalid kv_connector '" + c.kvConnector() + "': expected "
                    + KV_CONNECTORS.stream().map(k -> "'" + k + "'").collect(Collectors.joining(" or ")));
        }
        validateRanges(c);
        String storeProblem = SessionStoreUrl.problem(c.sessionStore());
        if (storeProblem != null) {
            throw invalid("session_store", UrlRedaction.redact(c.sessionStore()), storeProblem);
        }

        // Upstream validates an inference-gateway configuration as regular mode, whatever the PD flags say.
        PdMode mode = c.enableIgw() ? PdMode.NONE : c.pdMode();
        boolean discovery = c.serviceDiscovery();
        List<String> regularUrls = c.enableIgw() || discovery ? List.of() : c.workerUrls();
        List<String> prefillUrls = new ArrayList<>();
        c.prefillUrls().forEach(p -> prefillUrls.add(p == null ? null : p.url()));

        StaticKvSources.of(c);
        validateMode(c, mode, discovery, regularUrls, prefillUrls);
        validatePolicyParameters(c, c.policy());
        validateServer(c);
        if (discovery) {
            validateDiscovery(c, mode);
        }
        if (c.vllmDiscoveryAddress() != null) {
            validateHostPort("vllm_discovery_address", c.vllmDiscoveryAddress());
        }
        if (c.prometheusPort() != null && c.prometheusHost() != null && c.prometheusHost().isEmpty()) {
            throw invalid("metrics.host", "", "Host cannot be empty");
        }
        validateCompatibility(c, mode, discovery, regularUrls, prefillUrls);
        validateRetry(c);
        validateCircuitBreaker(c);
        validateSessions(c);
        validateUnbuiltFeatures(c);
    }

    /** Upstream's checks on flags of features this router does not build; UnsupportedFeatures then refuses them. */
    private static void validateUnbuiltFeatures(RouterConfig c) throws ConfigException {
        if (c.kvConnector().equalsIgnoreCase("moriio") && c.vllmDiscoveryAddress() == null) {
            throw new ConfigException("MoRI-IO KV connector requires service discovery to be enabled (ZMQ "
                    + "addresses are obtained via instance registration). Please run with "
                    + "`--vllm-discovery-address ${address}`");
        }
        if (c.programSchedulingConfigJson() != null && !c.enableProgramScheduling()) {
            throw new ConfigException("program_scheduling_config_json requires enable_program_scheduling");
        }
    }

    private static void validatePolicyName(String field, String name) throws ConfigException {
        if (name != null && !PolicyNames.isKnown(name)) {
            throw invalid(field, name, "Unknown policy; expected one of " + String.join(", ", PolicyNames.ALL));
        }
    }

    private static void validateRanges(RouterConfig c) throws ConfigException {
        port("port", c.port());
        port("service_discovery_port", c.serviceDiscoveryPort());
        if (c.prometheusPort() != null) {
            port("prometheus_port", c.prometheusPort());
        }
        for (PrefillUrl p : c.prefillUrls()) {
            if (p != null && p.bootstrapPort() != null && (p.bootstrapPort() < 0 || p.bootstrapPort() > 65535)) {
                throw invalid("bootstrap_port", p.bootstrapPort(), "Port must be between 1 and 65535");
            }
        }
        Integer affinityTtl = c.kvAwareSessionAffinityTtlSecs();
        ConfigContract.Range affinityTtlRange =
                ConfigContract.get().field("kv_aware_session_affinity_ttl_secs").range();
        if (affinityTtl != null && !affinityTtlRange.contains(affinityTtl)) {
            throw new ConfigException(affinityTtlRange.message());
        }
        nonNegative("worker_startup_timeout_secs", c.workerStartupTimeoutSecs());
        nonNegative("worker_startup_check_interval", c.workerStartupCheckInterval());
        nonNegative("balance_abs_threshold", c.balanceAbsThreshold());
        nonNegative("eviction_interval_secs", c.evictionIntervalSecs());
        nonNegative("max_tree_size", c.maxTreeSize());
        nonNegative("max_payload_size", c.maxPayloadSize());
        nonNegative("request_timeout_secs", c.requestTimeoutSecs());
        nonNegative("queue_size", c.queueSize());
        nonNegative("queue_timeout_secs", c.queueTimeoutSecs());
        if (c.rateLimitTokensPerSecond() != null) {
            nonNegative("rate_limit_tokens_per_second", c.rateLimitTokensPerSecond());
        }
        nonNegative("retry_max_retries", c.retryMaxRetries());
        nonNegative("retry_initial_backoff_ms", c.retryInitialBackoffMs());
        nonNegative("retry_max_backoff_ms", c.retryMaxBackoffMs());
        nonNegative("health_failure_threshold", c.healthFailureThreshold());
        nonNegative("health_success_threshold", c.healthSuccessThreshold());
        nonNegative("health_check_timeout_secs", c.healthCheckTimeoutSecs());
        nonNegative("health_check_interval_secs", c.healthCheckIntervalSecs());
        nonNegative("cb_failure_threshold", c.cbFailureThreshold());
        nonNegative("cb_success_threshold", c.cbSuccessThreshold());
        nonNegative("cb_timeout_duration_secs", c.cbTimeoutDurationSecs());
        nonNegative("cb_window_duration_secs", c.cbWindowDurationSecs());
        if (c.intraNodeDataParallelSize() < 1) {
            throw invalid("intra_node_data_parallel_size", c.intraNodeDataParallelSize(), "Must be > 0");
        }
    }

    private static void validateMode(RouterConfig c, PdMode mode, boolean discovery, List<String> regularUrls,
                                      List<String> prefillUrls) throws ConfigException {
        if (mode == PdMode.NONE) {
            validateUrls(regularUrls);
            return;
        }
        String label = pdLabel(mode);
        // Workers that register over ZMQ may be the only ones, as with Kubernetes discovery.
        if (!discovery && c.vllmDiscoveryAddress() == null) {
            if (prefillUrls.isEmpty()) {
                throw failed(label + " requires at least one prefill worker URL");
            }
            if (c.decodeUrls().isEmpty()) {
                throw failed(label + " requires at least one decode worker URL");
            }
        }
        validateUrls(prefillUrls);
        validateUrls(c.decodeUrls());
        for (PrefillUrl p : c.prefillUrls()) {
            if (p != null && p.bootstrapPort() != null && p.bootstrapPort() == 0) {
                throw invalid("bootstrap_port", 0, "Port must be between 1 and 65535");
            }
        }
        if (c.prefillPolicy() != null) {
            validatePolicyParameters(c, c.prefillPolicy());
        }
        if (c.decodePolicy() != null) {
            validatePolicyParameters(c, c.decodePolicy());
        }
    }

    private static void validatePolicyParameters(RouterConfig c, String policy) throws ConfigException {
        if (policy.equals(PolicyNames.KV_AWARE)) {
            validateKvAware(c);
            return;
        }
        if (policy.equals(PolicyNames.STICKY_BALANCED)) {
            validateStickyBalanced(c);
            return;
        }
        if (!policy.equals(PolicyNames.CACHE_AWARE)) {
            return;
        }
        if (!(c.cacheThreshold() >= 0.0 && c.cacheThreshold() <= 1.0)) {
            throw invalid("cache_threshold", c.cacheThreshold(), "Must be between 0.0 and 1.0");
        }
        if (!(c.balanceRelThreshold() >= 1.0)) {
            throw invalid("balance_rel_threshold", c.balanceRelThreshold(), "Must be >= 1.0");
        }
        if (c.evictionIntervalSecs() == 0) {
            throw invalid("eviction_interval_secs", 0, "Must be > 0");
        }
        if (c.maxTreeSize() == 0) {
            throw invalid("max_tree_size", 0, "Must be > 0");
        }
    }

    private static void validateServer(RouterConfig c) throws ConfigException {
        if (c.maxPayloadSize() == 0) {
            throw invalid("max_payload_size", 0, "Must be > 0");
        }
        if (c.requestTimeoutSecs() == 0) {
            throw invalid("request_timeout_secs", 0, "Must be > 0");
        }
        if (c.workerStartupTimeoutSecs() == 0) {
            throw invalid("worker_startup_timeout_secs", 0, "Must be > 0");
        }
        if (c.workerStartupCheckInterval() == 0) {
            throw invalid("worker_startup_check_interval_secs", 0, "Must be > 0");
        }
    }

    private static void validateDiscovery(RouterConfig c, PdMode mode) throws ConfigException {
        if (c.serviceDiscoveryPort() == 0) {
            throw invalid("discovery.port", 0, "Port must be > 0");
        }
        switch (mode) {
            case NONE -> {
                if (c.selector().isEmpty()) {
                    throw failed("Regular mode with service discovery requires a non-empty selector");
                }
            }
            case SGLANG_BOOTSTRAP, VLLM -> {
                if (c.prefillSelector().isEmpty() && c.decodeSelector().isEmpty()) {
                    throw failed(pdLabel(mode)
                            + " with service discovery requires at least one non-empty selector (prefill or decode)");
                }
            }
        }
    }

    private static void validateCompatibility(RouterConfig c, PdMode mode, boolean discovery, List<String> regularUrls,
                                              List<String> prefillUrls) throws ConfigException {
        if (c.enableIgw()) {
            return;
        }
        boolean grpc = isGrpc(regularUrls) || isGrpc(prefillUrls) || isGrpc(c.decodeUrls());
        if (grpc && c.tokenizerPath() == null && c.modelPath() == null) {
            throw failed("gRPC connection mode requires either --tokenizer-path or --model-path to be specified");
        }
        if (discovery || c.vllmDiscoveryAddress() != null) {
            return;
        }
        int workerCount = mode == PdMode.NONE ? regularUrls.size() : prefillUrls.size() + c.decodeUrls().size();
        if (c.policy().equals(PolicyNames.POWER_OF_TWO) && workerCount < 2) {
            throw incompatible("Power-of-two policy requires at least 2 workers");
        }
        if (mode != PdMode.NONE) {
            if (PolicyNames.POWER_OF_TWO.equals(c.prefillPolicy()) && prefillUrls.size() < 2) {
                throw incompatible("Power-of-two policy for prefill requires at least 2 prefill workers");
            }
            if (PolicyNames.POWER_OF_TWO.equals(c.decodePolicy()) && c.decodeUrls().size() < 2) {
                throw incompatible("Power-of-two policy for decode requires at least 2 decode workers");
            }
        }
    }

    private static String pdLabel(PdMode mode) {
        return mode == PdMode.VLLM ? "vLLM PD mode" : "PD mode";
    }

    private static void validateRetry(RouterConfig c) throws ConfigException {
        int maxRetries = c.effectiveRetryMaxRetries();
        if (maxRetries < 1) {
            throw invalid("retry.max_retries", maxRetries, "Must be >= 1 (set to 1 to effectively disable retries)");
        }
        if (c.retryInitialBackoffMs() == 0) {
            throw invalid("retry.initial_backoff_ms", 0, "Must be > 0");
        }
        if (c.retryMaxBackoffMs() < c.retryInitialBackoffMs()) {
            throw invalid("retry.max_backoff_ms", c.retryMaxBackoffMs(), "Must be >= initial_backoff_ms");
        }
        if (!(c.retryBackoffMultiplier() >= 1.0)) {
            throw invalid("retry.backoff_multiplier", c.retryBackoffMultiplier(), "Must be >= 1.0");
        }
        if (!(c.retryJitterFactor() >= 0.0 && c.retryJitterFactor() <= 1.0)) {
            throw invalid("retry.jitter_factor", c.retryJitterFactor(), "Must be between 0.0 and 1.0");
        }
    }

    private static void validateCircuitBreaker(RouterConfig c) throws ConfigException {
        long failureThreshold = c.disableCircuitBreaker() ? 0xFFFF_FFFFL : c.cbFailureThreshold();
        if (failureThreshold < 1) {
            throw invalid("circuit_breaker.failure_threshold", failureThreshold,
                    "Must be >= 1 (set to u32::MAX to effectively disable CB)");
        }
        if (c.cbSuccessThreshold() < 1) {
            throw invalid("circuit_breaker.success_threshold", c.cbSuccessThreshold(), "Must be >= 1");
        }
        if (c.cbTimeoutDurationSecs() == 0) {
            throw invalid("circuit_breaker.timeout_duration_secs", 0, "Must be > 0");
        }
        if (c.cbWindowDurationSecs() == 0) {
            throw invalid("circuit_breaker.window_duration_secs", 0, "Must be > 0");
        }
    }

    /** Ours: where sticky session ids come from, and how many a policy keeps. */
    private static void validateSessions(RouterConfig c) throws ConfigException {
        for (String name : c.sessionIdHeaders()) {
            if (!isHeaderName(name)) {
                throw invalid("session_id_headers", quoted(name),
                        "Must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)");
            }
        }
        for (String path : c.sessionIdBodyFields()) {
            if (!isBodyFieldPath(path)) {
                throw invalid("session_id_body_fields", quoted(path),
                        "Must be a top-level field name or parent.child (one level down)");
            }
        }
        if (c.maxSessions() < 1) {
            throw invalid("max_sessions", c.maxSessions(), "Must be > 0");
        }
    }

    /** An RFC 9110 token: what a header field name may be. */
    private static boolean isHeaderName(String name) {
        if (name == null || name.isEmpty()) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char ch = name.charAt(i);
            boolean alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
            if (!alnum && "!#$%&'*+-.^_`|~".indexOf(ch) < 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean isBodyFieldPath(String path) {
        if (path == null) {
            return false;
        }
        String[] parts = path.split("\\.", -1);
        if (parts.length > 2) {
            return false;
        }
        for (String part : parts) {
            if (part.isEmpty()) {
                return false;
            }
        }
        return true;
    }

    /** The value in quotes, control characters escaped so that the message stays one line. */
    private static String quoted(String value) {
        return value == null ? "null" : "'" + new String(JsonStringEncoder.getInstance().quoteAsString(value)) + "'";
    }

    /** Upstream's URL rules: non-empty, http/https/grpc scheme, parseable, with a host. */
    static void validateUrls(List<String> urls) throws ConfigException {
        for (String url : urls) {
            String problem = WorkerUrl.problem(url);
            if (problem != null) {
                throw invalid("worker_url", url == null ? "" : url, problem);
            }
        }
    }

    /** {@code HOST:PORT} with a port in 1..65535; an IPv6 host in brackets. */
    private static void validateHostPort(String field, String value) throws ConfigException {
        int colon = value.lastIndexOf(':');
        String host = colon < 0 ? "" : value.substring(0, colon);
        int port;
        try {
            port = colon < 0 ? -1 : Integer.parseInt(value.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        boolean bracketed = host.startsWith("[") && host.endsWith("]") && host.length() > 2;
        if (host.isEmpty() || (host.contains(":") && !bracketed) || port < 1 || port > 65535) {
            throw invalid(field, value, "Expected HOST:PORT with a port between 1 and 65535 (e.g. 0.0.0.0:30001)");
        }
    }

    private static boolean isGrpc(List<String> urls) {
        for (String url : urls) {
            if (url != null && (url.startsWith("grpc://") || url.startsWith("grpcs://"))) {
                return true;
            }
        }
        return false;
    }

    private static void port(String field, int value) throws ConfigException {
        if (value < 0 || value > 65535) {
            throw invalid(field, value, "Port must be between 0 and 65535 (0 picks a free port)");
        }
    }

    private static void nonNegative(String field, long value) throws ConfigException {
        if (value < 0) {
            throw invalid(field, value, "Must be >= 0");
        }
    }

    private static void validateKvAware(RouterConfig c) throws ConfigException {
        if (!(Double.isFinite(c.routerTemperature()) && c.routerTemperature() >= 0.0)) {
            throw invalid("router_temperature", c.routerTemperature(), "Must be finite and >= 0.0");
        }
        fraction("kv_penalty_host", c.kvPenaltyHost());
        fraction("kv_penalty_external", c.kvPenaltyExternal());
        fraction("kv_penalty_disk", c.kvPenaltyDisk());
    }

    private static void validateStickyBalanced(RouterConfig c) throws ConfigException {
        if (!(Double.isFinite(c.stickyBalancedGroupMargin()) && c.stickyBalancedGroupMargin() >= 0.0)) {
            throw invalid("sticky_balanced_group_margin", c.stickyBalancedGroupMargin(), "Must be finite and >= 0.0");
        }
        if (!(Double.isFinite(c.stickyBalancedMoveMargin()) && c.stickyBalancedMoveMargin() >= 0.0)) {
            throw invalid("sticky_balanced_move_margin", c.stickyBalancedMoveMargin(), "Must be finite and >= 0.0");
        }
        fraction("sticky_balanced_move_kv_usage", c.stickyBalancedMoveKvUsage());
        if (!(Double.isFinite(c.stickyBalancedToolHoldSecs()) && c.stickyBalancedToolHoldSecs() >= 0.0
                && c.stickyBalancedToolHoldSecs() <= MAX_TOOL_HOLD_SECS)) {
            throw invalid("sticky_balanced_tool_hold_secs", c.stickyBalancedToolHoldSecs(),
                    "Must be finite and between 0.0 and 3600.0");
        }
    }

    private static void fraction(String field, double value) throws ConfigException {
        if (!(Double.isFinite(value) && value >= 0.0 && value <= 1.0)) {
            throw invalid(field, value, "Must be finite and between 0.0 and 1.0");
        }
    }

    private static ConfigException invalid(String field, Object value, String reason) {
        return new ConfigException(PREFIX + "Invalid value for field '" + field + "': " + render(value) + " - " + reason);
    }

    private static ConfigException failed(String reason) {
        return new ConfigException(PREFIX + "Validation failed: " + reason);
    }

    private static ConfigException incompatible(String reason) {
        return new ConfigException(PREFIX + "Incompatible configuration: " + reason);
    }

    /** Numbers as upstream prints them: a whole float without ".0" (Rust's Display for f32/f64). */
    private static String render(Object value) {
        if (value instanceof Double d && !d.isInfinite() && !d.isNaN() && d == Math.rint(d) && Math.abs(d) < 1e15) {
            return Long.toString(d.longValue());
        }
        return String.valueOf(value);
    }
}
