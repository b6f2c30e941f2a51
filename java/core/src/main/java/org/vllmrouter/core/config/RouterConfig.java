package org.vllmrouter.core.config;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.type.LogicalType;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The router configuration: the JSON form of the Python {@code RouterArgs} dataclass (snake_case field
 * names, the dataclass defaults for missing fields). Component order is the canonical JSON field order.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record RouterConfig(
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> workerUrls,
        @JsonSetter(nulls = Nulls.FAIL) String host,
        int port,
        boolean miniLb,
        boolean pdDisaggregation,
        boolean vllmPdDisaggregation,
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<PrefillUrl> prefillUrls,
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> decodeUrls,
        @JsonSetter(nulls = Nulls.FAIL) String policy,
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
        @JsonSetter(nulls = Nulls.AS_EMPTY) Map<String, String> selector,
        int serviceDiscoveryPort,
        String serviceDiscoveryNamespace,
        @JsonSetter(nulls = Nulls.AS_EMPTY) Map<String, String> prefillSelector,
        @JsonSetter(nulls = Nulls.AS_EMPTY) Map<String, String> decodeSelector,
        @JsonSetter(nulls = Nulls.FAIL) String bootstrapPortAnnotation,
        String vllmDiscoveryAddress,
        @JsonSetter(nulls = Nulls.FAIL) String kvConnector,
        Integer prometheusPort,
        String prometheusHost,
        List<String> requestIdHeaders,
        int requestTimeoutSecs,
        int maxConcurrentRequests,
        int queueSize,
        int queueTimeoutSecs,
        Integer rateLimitTokensPerSecond,
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> corsAllowedOrigins,
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
        @JsonSetter(nulls = Nulls.FAIL) String healthCheckEndpoint,
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
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> kvEventSource,
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> kvEventReplaySource,
        int kvEventBlockSize,
        String kvEventModel,
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> pdKvEvents,
        boolean enableProgramScheduling,
        String programSchedulingConfigJson,
        String wasmMiddleware,
        String wasmMiddlewareSha256,
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> wasmMiddlewareRoutes,
        @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> apiKeyValidationUrls,
        String adminApiKey,
        @JsonSetter(nulls = Nulls.FAIL) String sessionStore,
        @JsonSetter(nulls = Nulls.FAIL) List<String> sessionIdHeaders,
        @JsonSetter(nulls = Nulls.FAIL) List<String> sessionIdBodyFields,
        int maxSessions) {

    /** Prometheus port used when {@code prometheus_port} is null: the flag's default (upstream always starts it). */
    public static final int DEFAULT_PROMETHEUS_PORT =
            ConfigContract.get().field("prometheus_port").flagDefault().intValue();
    /** Prometheus host used when {@code prometheus_host} is null: the flag's default. */
    public static final String DEFAULT_PROMETHEUS_HOST =
            ConfigContract.get().field("prometheus_host").flagDefault().textValue();

    private static final ObjectMapper MAPPER = strictMapper();

    private static final RouterConfig DEFAULTS = readDefaults();

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
     */
    public static RouterConfig fromJson(String json) throws ConfigException {
        JsonNode given;
        try {
            given = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new ConfigException("Invalid config JSON: " + e.getOriginalMessage());
        }
        if (given == null || !given.isObject()) {
            throw new ConfigException("Invalid config JSON: expected a JSON object");
        }
        ObjectNode merged = MAPPER.valueToTree(DEFAULTS);
        for (Map.Entry<String, JsonNode> field : given.properties()) {
            if (!merged.has(field.getKey())) {
                throw new ConfigException("Unknown config field '" + field.getKey() + "'");
            }
            merged.set(field.getKey(), field.getValue());
        }
        try {
            return MAPPER.treeToValue(merged, RouterConfig.class);
        } catch (JsonMappingException e) {
            String name = e.getPath().isEmpty() ? null : e.getPath().get(0).getFieldName();
            throw new ConfigException(typeError(name, given, e.getOriginalMessage()));
        } catch (InputCoercionException e) {
            throw new ConfigException("Invalid config value: " + e.getOriginalMessage());
        } catch (JsonProcessingException e) {
            throw new ConfigException("Invalid config JSON: " + e.getOriginalMessage());
        }
    }

    /** Canonical JSON: every field, in declaration order. */
    public String toJson() {
        try {
            return MAPPER.writeValueAsString(this);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("RouterConfig is always serialisable", e);
        }
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
    @JsonIgnore
    public PdMode pdMode() {
        return vllmPdDisaggregation ? PdMode.VLLM : pdDisaggregation ? PdMode.SGLANG_BOOTSTRAP : PdMode.NONE;
    }

    /** Prefill/decode disaggregation (either flavour). */
    @JsonIgnore
    public boolean isPdMode() {
        return pdMode() != PdMode.NONE;
    }

    @JsonIgnore
    public int effectivePrometheusPort() {
        return prometheusPort == null ? DEFAULT_PROMETHEUS_PORT : prometheusPort;
    }

    @JsonIgnore
    public String effectivePrometheusHost() {
        return prometheusHost == null ? DEFAULT_PROMETHEUS_HOST : prometheusHost;
    }

    /** Maximum number of attempts per request; {@code disable_retries} makes it 1, as upstream. */
    @JsonIgnore
    public int effectiveRetryMaxRetries() {
        return disableRetries ? 1 : retryMaxRetries;
    }

    /**
     * The defaults, by field name. A record component the contract lacked would silently take Java's zero value,
     * and a contract field the record lacked could never be set: such a build does not start.
     */
    private static RouterConfig readDefaults() {
        ConfigContract contract = ConfigContract.get();
        List<String> contractNames = contract.fields().stream().map(ConfigContract.Field::name).toList();
        List<String> recordNames = jsonFieldNames();
        if (!contractNames.equals(recordNames)) {
            throw new IllegalStateException("RouterConfig does not match " + ConfigContract.RESOURCE
                    + ": only in RouterConfig " + without(recordNames, contractNames)
                    + ", only in the contract " + without(contractNames, recordNames)
                    + "; field order: RouterConfig " + recordNames + ", contract " + contractNames);
        }
        try {
            return MAPPER.treeToValue(contract.defaults(), RouterConfig.class);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("A default in " + ConfigContract.RESOURCE + " does not fit RouterConfig: "
                    + e.getOriginalMessage(), e);
        }
    }

    private static List<String> without(List<String> names, List<String> removed) {
        return names.stream().filter(n -> !removed.contains(n)).toList();
    }

    /** The JSON names of the record's components, in declaration order. */
    static List<String> jsonFieldNames() {
        PropertyNamingStrategies.NamingBase snakeCase =
                (PropertyNamingStrategies.NamingBase) PropertyNamingStrategies.SNAKE_CASE;
        return Arrays.stream(RouterConfig.class.getRecordComponents())
                .map(c -> snakeCase.translate(c.getName()))
                .toList();
    }

    private static String typeError(String field, JsonNode given, String detail) {
        if (field == null) {
            return "Invalid config value: " + detail;
        }
        JsonNode value = given.get(field);
        return "Invalid value for config field '" + field + "': " + (value == null ? "null" : value.toString())
                + " (" + firstLine(detail) + ")";
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    private static <T> List<T> unmodifiable(List<T> list) {
        return list == null ? List.of() : Collections.unmodifiableList(list);
    }

    private static Map<String, String> unmodifiable(Map<String, String> map) {
        return map == null ? Map.of() : Collections.unmodifiableMap(map);
    }

    private static ObjectMapper strictMapper() {
        JsonMapper mapper = JsonMapper.builder()
                .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
                .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
                .build();
        // Python sends real JSON types; a number where a string belongs is a mistake, not a value.
        mapper.coercionConfigFor(LogicalType.Textual)
                .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        return mapper;
    }
}
