package org.vllmrouter.core.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
/**
 * The router configuration: the JSON form of the Python {@code RouterArgs} dataclass (snake_case field
 * names, the dataclass defaults for missing fields). Component order is the canonical JSON field order.
 */
public record RouterConfig(
        List<String> workerUrls,
        String host,
        int port,
        boolean miniLb,
        boolean pdDisaggregation,
        boolean vllmPdDisaggregation,
        List<PrefillUrl> prefillUrls,
        List<String> decodeUrls,
        String policy,
        String prefillPolicy,
        String decodePolicy,
        int workerStartupTimeoutSecs,
        int workerStartupCheckInterval,
        double cacheThreshold,
        int balanceAbsThreshold,
        double balanceRelThreshold,
        int evictionIntervalSecs,
        long maxTreeSize,
        long maxPayloadSize,
        int intraNodeDataParallelSize,
        boolean enableIgw,
        String apiKey,
        String logDir,
        String logLevel,
        boolean serviceDiscovery,
        Map<String, String> selector,
        int serviceDiscoveryPort,
        String serviceDiscoveryNamespace,
        Map<String, String> prefillSelector,
        Map<String, String> decodeSelector,
        String bootstrapPortAnnotation,
        String vllmDiscoveryAddress,
        String kvConnector,
        Integer prometheusPort,
        String prometheusHost,
        List<String> requestIdHeaders,
        int requestTimeoutSecs,
        int maxConcurrentRequests,
        int queueSize,
        int queueTimeoutSecs,
        Integer rateLimitTokensPerSecond,
        List<String> corsAllowedOrigins,
        int retryMaxRetries,
        int retryInitialBackoffMs,
        int retryMaxBackoffMs,
        double retryBackoffMultiplier,
        double retryJitterFactor,
        boolean disableRetries,
        int healthFailureThreshold,
        int healthSuccessThreshold,
        int healthCheckTimeoutSecs,
        int healthCheckIntervalSecs,
        String healthCheckEndpoint,
        int cbFailureThreshold,
        int cbSuccessThreshold,
        int cbTimeoutDurationSecs,
        int cbWindowDurationSecs,
        boolean disableCircuitBreaker,
        String modelPath,
        String tokenizerPath,
        double routerTemperature,
        double kvPenaltyHost,
        double kvPenaltyExternal,
        double kvPenaltyDisk,
        Integer kvAwareSessionAffinityTtlSecs,
        double stickyBalancedGroupMargin,
        String stickyBalancedGroupSeparator,
        double stickyBalancedMoveMargin,
        double stickyBalancedMoveKvUsage,
        double stickyBalancedToolHoldSecs,
        boolean stickyBalancedGroupByKv,
        List<String> kvEventSource,
        List<String> kvEventReplaySource,
        int kvEventBlockSize,
        String kvEventModel,
        List<String> pdKvEvents,
        boolean enableProgramScheduling,
        String programSchedulingConfigJson,
        String wasmMiddleware,
        String wasmMiddlewareSha256,
        List<String> wasmMiddlewareRoutes,
        List<String> apiKeyValidationUrls,
        String adminApiKey,
        String sessionStore,
        List<String> sessionIdHeaders,
        List<String> sessionIdBodyFields,
        int maxSessions,
        boolean enableTrace,
        String otlpTracesEndpoint,
        double otelSamplingRatio,
        List<String> otelExcludedPaths) {

    /** Prometheus port used when {@code prometheus_port} is null: the flag's default (upstream always starts it). */
    public static final int DEFAULT_PROMETHEUS_PORT =
            ((Number) ConfigContract.get().field("prometheus_port").flagDefault()).intValue();
    /** Prometheus host used when {@code prometheus_host} is null: the flag's default. */
    public static final String DEFAULT_PROMETHEUS_HOST =
            (String) ConfigContract.get().field("prometheus_host").flagDefault();

    private static final RecordComponent[] COMPONENTS = RouterConfig.class.getRecordComponents();
    private static final List<String> NAMES = jsonFieldNames();
    private static final Constructor<RouterConfig> CANONICAL = canonicalConstructor();
    /** The contract's defaults, one a component, as the record holds them. */
    private static final Object[] DEFAULT_VALUES = readDefaults();
    private static final RouterConfig DEFAULTS = construct(DEFAULT_VALUES.clone());

    public RouterConfig {
        workerUrls = unmodifiable(workerUrls);
        prefillUrls = unmodifiable(prefillUrls);
        decodeUrls = unmodifiable(decodeUrls);
        requestIdHeaders = requestIdHeaders == null ? null : Collections.unmodifiableList(requestIdHeaders);
        corsAllowedOrigins = unmodifiable(corsAllowedOrigins);
        kvEventSource = unmodifiable(kvEventSource);
        kvEventReplaySource = unmodifiable(kvEventReplaySource);
        pdKvEvents = unmodifiable(pdKvEvents);
        wasmMiddlewareRoutes = unmodifiable(wasmMiddlewareRoutes);
        apiKeyValidationUrls = unmodifiable(apiKeyValidationUrls);
        sessionIdHeaders = unmodifiable(sessionIdHeaders);
        sessionIdBodyFields = unmodifiable(sessionIdBodyFields);
        otelExcludedPaths = unmodifiable(otelExcludedPaths);
        selector = unmodifiable(selector);
        prefillSelector = unmodifiable(prefillSelector);
        decodeSelector = unmodifiable(decodeSelector);
    }

    /** The RouterArgs dataclass defaults, from the config contract. */
    public static RouterConfig defaults() {
        return DEFAULTS;
    }

    /**
     * Reads a configuration: fields missing from {@code json} take their defaults; an unknown field or a
     * value of the wrong type is an error naming the field. Does not {@link #validate()}.
     *
     * <p>The JSON types are strict, as Python sends them: a string where a number belongs (or the reverse) is an
     * error, not a value, and so is a fraction for a whole number. A null is kept where the Python annotation admits
     * None, stands for the empty list or object where the default is one, and is an error anywhere else.
     */
    public static RouterConfig fromJson(String json) throws ConfigException {
        Object given;
        try {
            given = JsonValues.read(json);
        } catch (JsonProcessingException e) {
            throw new ConfigException("Invalid config JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new ConfigException("Invalid config JSON: " + e.getMessage());
        }
        if (!(given instanceof Map<?, ?> fields)) {
            throw new ConfigException("Invalid config JSON: expected a JSON object");
        }
        for (Object name : fields.keySet()) {
            if (!NAMES.contains(name)) {
                throw new ConfigException("Unknown config field '" + name + "'");
            }
        }
        Object[] values = DEFAULT_VALUES.clone();
        // The contract's fields are the components, in order: readDefaults refuses a build where they are not.
        List<ConfigContract.Field> contract = ConfigContract.get().fields();
        for (int i = 0; i < COMPONENTS.length; i++) {
            String name = NAMES.get(i);
            if (fields.containsKey(name)) {
                Object value = fields.get(name);
                try {
                    values[i] = componentValue(contract.get(i), COMPONENTS[i], value);
                } catch (IllegalArgumentException e) {
                    throw new ConfigException("Invalid value for config field '" + name + "': "
                            + JsonValues.write(value) + " (" + e.getMessage() + ")");
                }
            }
        }
        return construct(values);
    }

    /** Canonical JSON: every field, in declaration order. */
    public String toJson() {
        Map<String, Object> fields = new LinkedHashMap<>();
        for (int i = 0; i < COMPONENTS.length; i++) {
            Object value;
            try {
                value = COMPONENTS[i].getAccessor().invoke(this);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("RouterConfig's accessors are public", e);
            }
            fields.put(NAMES.get(i), jsonValue(value));
        }
        return JsonValues.write(fields);
    }

    /**
     * Checks the configuration as upstream's validator does (and the policy names), then refuses what asks for a
     * feature this router does not build.
     */
    public void validate() throws ConfigException {
        ConfigValidator.validate(this);
        UnsupportedFeatures.check(this);
    }

    /** The prefill/decode disaggregation flavour; {@code vllm_pd_disaggregation} wins when both are set. */
    public PdMode pdMode() {
        return vllmPdDisaggregation ? PdMode.VLLM : pdDisaggregation ? PdMode.SGLANG_BOOTSTRAP : PdMode.NONE;
    }

    /** Prefill/decode disaggregation (either flavour). */
    public boolean isPdMode() {
        return pdMode() != PdMode.NONE;
    }

    public int effectivePrometheusPort() {
        return prometheusPort == null ? DEFAULT_PROMETHEUS_PORT : prometheusPort;
    }

    public String effectivePrometheusHost() {
        return prometheusHost == null ? DEFAULT_PROMETHEUS_HOST : prometheusHost;
    }

    /** Maximum number of attempts per request; {@code disable_retries} makes it 1, as upstream. */
    public int effectiveRetryMaxRetries() {
        return disableRetries ? 1 : retryMaxRetries;
    }

    /**
     * The defaults, by field name. A record component the contract lacked would silently take Java's zero value,
     * and a contract field the record lacked could never be set: such a build does not start.
     */
    private static Object[] readDefaults() {
        ConfigContract contract = ConfigContract.get();
        List<String> contractNames = contract.fields().stream().map(ConfigContract.Field::name).toList();
        if (!contractNames.equals(NAMES)) {
            throw new IllegalStateException("RouterConfig does not match " + ConfigContract.RESOURCE
                    + ": only in RouterConfig " + without(NAMES, contractNames)
                    + ", only in the contract " + without(contractNames, NAMES)
                    + "; field order: RouterConfig " + NAMES + ", contract " + contractNames);
        }
        Object[] values = new Object[COMPONENTS.length];
        for (int i = 0; i < values.length; i++) {
            ConfigContract.Field field = contract.fields().get(i);
            try {
                values[i] = componentValue(field, COMPONENTS[i], field.defaultValue());
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("The default of '" + field.name() + "' in " + ConfigContract.RESOURCE
                        + " does not fit RouterConfig: " + e.getMessage(), e);
            }
        }
        return values;
    }

    private static List<String> without(List<String> names, List<String> removed) {
        return names.stream().filter(n -> !removed.contains(n)).toList();
    }

    /** The JSON names of the record's components, in declaration order: snake_case, as the dataclass has them. */
    static List<String> jsonFieldNames() {
        List<String> names = new ArrayList<>();
        for (RecordComponent c : COMPONENTS) {
            StringBuilder snake = new StringBuilder();
            for (char ch : c.getName().toCharArray()) {
                if (Character.isUpperCase(ch)) {
                    snake.append('_').append(Character.toLowerCase(ch));
                } else {
                    snake.append(ch);
                }
            }
            names.add(snake.toString());
        }
        return List.copyOf(names);
    }

    private static Constructor<RouterConfig> canonicalConstructor() {
        Class<?>[] types = Arrays.stream(COMPONENTS).map(RecordComponent::getType).toArray(Class<?>[]::new);
        try {
            return RouterConfig.class.getDeclaredConstructor(types);
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException("A record has its canonical constructor", e);
        }
    }

    private static RouterConfig construct(Object[] values) {
        try {
            return CANONICAL.newInstance(values);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("RouterConfig's canonical constructor is public", e);
        }
    }

    /**
     * {@code value} (a JSON value as {@link JsonValues} reads it) as {@code component} holds it.
     *
     * @throws IllegalArgumentException saying what was expected, when the value does not fit
     */
    private static Object componentValue(ConfigContract.Field field, RecordComponent component, Object value) {
        Class<?> type = component.getType();
        if (value == null) {
            if (field.nullable()) {
                return null;
            }
            if (type == List.class && field.defaultValue() instanceof List<?> d && d.isEmpty()) {
                return List.of();
            }
            if (type == Map.class && field.defaultValue() instanceof Map<?, ?> d && d.isEmpty()) {
                return Map.of();
            }
            throw new IllegalArgumentException("null is not allowed here");
        }
        if (type == String.class) {
            return expect(value, String.class, "expected a string");
        }
        if (type == int.class || type == Integer.class) {
            return intValue(value);
        }
        if (type == long.class) {
            if (value instanceof Long l) {
                return l;
            }
            throw new IllegalArgumentException(value instanceof BigInteger
                    ? "out of range of a 64-bit integer" : "expected a whole number");
        }
        if (type == double.class) {
            if (value instanceof Number n) {
                return n.doubleValue();
            }
            throw new IllegalArgumentException("expected a number");
        }
        if (type == boolean.class) {
            return expect(value, Boolean.class, "expected true or false");
        }
        if (type == List.class) {
            Class<?> item = (Class<?>) ((ParameterizedType) component.getGenericType()).getActualTypeArguments()[0];
            if (!(value instanceof List<?> list)) {
                throw new IllegalArgumentException(item == PrefillUrl.class
                        ? "expected an array of [url, bootstrap_port] pairs" : "expected an array of strings");
            }
            List<Object> items = new ArrayList<>(list.size());
            for (Object v : list) {
                items.add(item == PrefillUrl.class
                        ? prefillUrl(v) : expect(v, String.class, "expected an array of strings"));
            }
            return items;
        }
        if (type == Map.class) {
            if (!(value instanceof Map<?, ?> map)) {
                throw new IllegalArgumentException("expected an object of strings");
            }
            Map<String, String> entries = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                entries.put((String) e.getKey(), expect(e.getValue(), String.class, "expected an object of strings"));
            }
            return entries;
        }
        throw new IllegalStateException("RouterConfig component " + component.getName() + " has no JSON form");
    }

    private static int intValue(Object value) {
        if (value instanceof Long l && l == l.intValue()) {
            return l.intValue();
        }
        throw new IllegalArgumentException(value instanceof Long || value instanceof BigInteger
                ? "out of range of a 32-bit integer" : "expected a whole number");
    }

    private static <T> T expect(Object value, Class<T> type, String expected) {
        if (type.isInstance(value)) {
            return type.cast(value);
        }
        throw new IllegalArgumentException(expected);
    }

    /** A prefill worker: {@code [url]} or {@code [url, bootstrap_port_or_null]}. */
    private static PrefillUrl prefillUrl(Object value) {
        if (value instanceof List<?> pair && (pair.size() == 1 || pair.size() == 2)
                && pair.get(0) instanceof String url) {
            Object port = pair.size() == 2 ? pair.get(1) : null;
            return new PrefillUrl(url, port == null ? null : intValue(port));
        }
        throw new IllegalArgumentException("expected an array of [url, bootstrap_port] pairs");
    }

    /** A component's value as a JSON value. */
    private static Object jsonValue(Object value) {
        if (value instanceof PrefillUrl p) {
            return Arrays.asList(p.url(), p.bootstrapPort());
        }
        if (value instanceof List<?> list) {
            return list.stream().map(RouterConfig::jsonValue).toList();
        }
        return value;
    }

    private static <T> List<T> unmodifiable(List<T> list) {
        return list == null ? List.of() : Collections.unmodifiableList(list);
    }

    private static Map<String, String> unmodifiable(Map<String, String> map) {
        return map == null ? Map.of() : Collections.unmodifiableMap(map);
    }
}
