package org.vllmrouter.core.config;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * What the router takes from its process environment besides {@link RouterConfig}: the environment variables and
 * system properties the engine honours, read once when a router starts. This is the one place that reads them; the
 * settings sections carry the values on to the components that use them, so a test gives a router the environment it
 * wants with {@link #of} instead of changing the process's.
 *
 * <p>Values are kept as given (null when unset); each is interpreted, and a bad one refused, by its reader.
 *
 * @param sessionTtl {@value #SESSION_TTL_VARIABLE}: sticky sessions' idle TTL in seconds, as upstream names it
 * @param openaiApiKey {@value #OPENAI_API_KEY_VARIABLE}: the key the PD stages send when the client sent none
 * @param eventLoops {@value #EVENT_LOOPS_VARIABLE}: how many event loops, as it sizes upstream's runtime
 * @param transport {@value #TRANSPORT_VARIABLE}: the socket layer under the event loops
 * @param certFile {@value #CERT_FILE_VARIABLE}: a PEM bundle of CAs trusted for {@code https} workers
 * @param heapFloor {@value #HEAP_FLOOR_PROPERTY} (a system property): the heap growth bound's floor
 * @param otel the standard {@code OTEL_*} variables the span exporter honours
 */
public record StartEnvironment(String sessionTtl, String openaiApiKey, String eventLoops, String transport,
                               String certFile, String heapFloor, Otel otel) {
    public static final String SESSION_TTL_VARIABLE = "VLLM_ROUTER_SLL_SESSION_EXPIRATION_IN_S";
    public static final String OPENAI_API_KEY_VARIABLE = "OPENAI_API_KEY";
    public static final String EVENT_LOOPS_VARIABLE = "TOKIO_WORKER_THREADS";
    public static final String TRANSPORT_VARIABLE = "VLLM_ROUTER_TRANSPORT";
    public static final String CERT_FILE_VARIABLE = "SSL_CERT_FILE";
    public static final String HEAP_FLOOR_PROPERTY = "vllm.router.fullCollectionFloor";

    /**
     * The OpenTelemetry exporter's standard variables (the signal-specific {@code _TRACES_} one wins over the
     * generic one, as the OpenTelemetry specification orders them).
     *
     * @param endpoint {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}, else {@code OTEL_EXPORTER_OTLP_ENDPOINT}: used
     *                 when {@code otlp_traces_endpoint} is unset, as upstream does
     * @param tracesEndpoint whether {@code endpoint} came from the signal-specific variable (used as is, never
     *                       extended with {@code /v1/traces})
     * @param protocol {@code OTEL_EXPORTER_OTLP_TRACES_PROTOCOL}, else {@code OTEL_EXPORTER_OTLP_PROTOCOL}
     * @param headers {@code OTEL_EXPORTER_OTLP_TRACES_HEADERS}, else {@code OTEL_EXPORTER_OTLP_HEADERS}
     * @param serviceName {@code OTEL_SERVICE_NAME}
     */
    public record Otel(String endpoint, boolean tracesEndpoint, String protocol, String headers,
                       String serviceName) {
        static Otel of(Map<String, String> variables) {
            String traces = variables.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
            return new Otel(traces != null ? traces : variables.get("OTEL_EXPORTER_OTLP_ENDPOINT"), traces != null,
                    either(variables, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
                    either(variables, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"),
                    variables.get("OTEL_SERVICE_NAME"));
        }

        private static String either(Map<String, String> variables, String specific, String generic) {
            String value = variables.get(specific);
            return value != null ? value : variables.get(generic);
        }
    }

    /** Nothing set: every value takes its default. */
    public static final StartEnvironment EMPTY = of(Map.of(), Map.of());

    /** This process's environment variables and system properties, as they are now. */
    public static StartEnvironment current() {
        Properties system = System.getProperties();
        Map<String, String> properties = new HashMap<>();
        for (String name : system.stringPropertyNames()) {
            properties.put(name, system.getProperty(name));
        }
        return of(System.getenv(), properties);
    }

    /** The values {@code variables} (environment variables by name) and {@code properties} (system properties) hold. */
    public static StartEnvironment of(Map<String, String> variables, Map<String, String> properties) {
        return new StartEnvironment(variables.get(SESSION_TTL_VARIABLE), variables.get(OPENAI_API_KEY_VARIABLE),
                variables.get(EVENT_LOOPS_VARIABLE), variables.get(TRANSPORT_VARIABLE),
                variables.get(CERT_FILE_VARIABLE), properties.get(HEAP_FLOOR_PROPERTY), Otel.of(variables));
    }
}
