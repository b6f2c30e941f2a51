package org.vllmrouter.core.settings;

import java.math.BigDecimal;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;

/**
 * OpenTelemetry span export: whether requests are traced, where the spans go and how, and which requests are left
 * out. Built from {@code enable_trace}, {@code otlp_traces_endpoint}, {@code otel_sampling_ratio},
 * {@code otel_excluded_paths} and the standard {@code OTEL_*} variables ({@link StartEnvironment.Otel}).
 *
 * @param enabled false: nothing is traced, and no OpenTelemetry object is made
 * @param endpoint the collector's URL (for {@link Protocol#HTTP_PROTOBUF} the full path of the traces call);
 *                 null when not enabled
 * @param headers sent with every export (an authorization token for a hosted collector)
 * @param serviceName the {@code service.name} resource attribute
 * @param samplingRatio share of new traces sampled; a client's sampling decision is followed
 * @param excludedPaths request paths (without the query) that are never traced
 */
public record TracingSettings(boolean enabled, String endpoint, Protocol protocol, Map<String, String> headers,
                              String serviceName, double samplingRatio, Set<String> excludedPaths) {
    /** Upstream's exporter speaks gRPC; OTLP over HTTP with protobuf bodies is the other standard transport. */
    public enum Protocol {
        GRPC("grpc", "http://localhost:4317"),
        HTTP_PROTOBUF("http/protobuf", "http://localhost:4318");

        final String name;
        final String defaultEndpoint;

        Protocol(String name, String defaultEndpoint) {
            this.name = name;
            this.defaultEndpoint = defaultEndpoint;
        }

        /** As {@code OTEL_EXPORTER_OTLP_PROTOCOL} names it. */
        public String wireName() {
            return name;
        }
    }

    public static final String DEFAULT_SERVICE_NAME = "vllm-router";
    static final String TRACES_PATH = "/v1/traces";
    private static final String EXPORTER_ERROR = "Failed to create OTLP exporter: invalid URI ";

    public TracingSettings {
        headers = Map.copyOf(headers);
        excludedPaths = Set.copyOf(excludedPaths);
    }

    /**
     * @throws ConfigException a sampling ratio outside [0, 1] (always) and, when tracing is enabled, an endpoint
     *                         that is not an http(s) URL, an unknown protocol or malformed headers
     */
    public static TracingSettings from(RouterConfig c, StartEnvironment env) throws ConfigException {
        double ratio = c.otelSamplingRatio();
        if (!(ratio >= 0.0 && ratio <= 1.0)) {
            throw new ConfigException("OTel sampling_ratio must be within [0.0, 1.0], got " + shown(ratio));
        }
        if (!c.enableTrace()) {
            return new TracingSettings(false, null, Protocol.GRPC, Map.of(), DEFAULT_SERVICE_NAME, ratio,
                    Set.copyOf(c.otelExcludedPaths()));
        }
        StartEnvironment.Otel otel = env.otel();
        Protocol protocol = protocol(otel.protocol());
        String given = c.otlpTracesEndpoint() != null ? c.otlpTracesEndpoint() : otel.endpoint();
        boolean asIs = c.otlpTracesEndpoint() == null && otel.tracesEndpoint();
        String endpoint = endpoint(given == null ? protocol.defaultEndpoint : given, protocol, asIs);
        String service = otel.serviceName() == null || otel.serviceName().isBlank()
                ? DEFAULT_SERVICE_NAME : otel.serviceName();
        return new TracingSettings(true, endpoint, protocol, headers(otel.headers()), service, ratio,
                Set.copyOf(c.otelExcludedPaths()));
    }

    /** Whether a request for {@code path} (without its query) is traced. */
    public boolean traces(String path) {
        return enabled && !excludedPaths.contains(path);
    }

    /**
     * The collector URL, as upstream takes it: {@code host:port} means {@code http://host:port}. Over
     * HTTP/protobuf a URL without a path gets {@value #TRACES_PATH}, unless it came from the signal-specific
     * variable, which the specification uses as is.
     */
    static String endpoint(String given, Protocol protocol, boolean asIs) throws ConfigException {
        String text = given.strip();
        if (!text.contains("://")) {
            text = "http://" + text;
        }
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new ConfigException(EXPORTER_ERROR + "invalid uri character (endpoint '" + given + "')");
        }
        String scheme = uri.getScheme();
        if (scheme == null || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))) {
            throw new ConfigException(EXPORTER_ERROR + "invalid scheme (endpoint '" + given + "')");
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new ConfigException(EXPORTER_ERROR + "invalid authority (endpoint '" + given + "')");
        }
        if (uri.getPort() > 65535) {
            throw new ConfigException(EXPORTER_ERROR + "invalid port (endpoint '" + given + "')");
        }
        String path = uri.getRawPath() == null ? "" : uri.getRawPath();
        if (protocol == Protocol.HTTP_PROTOBUF && !asIs && (path.isEmpty() || path.equals("/"))) {
            return text.replaceAll("/$", "") + TRACES_PATH;
        }
        return text;
    }

    private static Protocol protocol(String name) throws ConfigException {
        if (name == null || name.isBlank()) {
            return Protocol.GRPC;
        }
        for (Protocol p : Protocol.values()) {
            if (p.name.equals(name.strip())) {
                return p;
            }
        }
        throw new ConfigException("Unsupported OTLP protocol '" + name + "' in OTEL_EXPORTER_OTLP_PROTOCOL: expected "
                + String.join(" or ", List.of(Protocol.GRPC.name, Protocol.HTTP_PROTOBUF.name)));
    }

    /** {@code key=value,key=value}, each part percent-decoded, as the specification writes the variable. */
    private static Map<String, String> headers(String text) throws ConfigException {
        Map<String, String> headers = new LinkedHashMap<>();
        if (text == null || text.isBlank()) {
            return headers;
        }
        for (String item : text.split(",")) {
            int eq = item.indexOf('=');
            if (eq <= 0) {
                throw new ConfigException("Invalid OTEL_EXPORTER_OTLP_HEADERS entry '" + item.strip()
                        + "': expected key=value");
            }
            headers.put(URLDecoder.decode(item.substring(0, eq).strip(), StandardCharsets.UTF_8),
                    URLDecoder.decode(item.substring(eq + 1).strip(), StandardCharsets.UTF_8));
        }
        return headers;
    }

    /** A number as upstream's message prints it: {@code 2}, {@code 1.5}, {@code NaN}. */
    private static String shown(double value) {
        return Double.isFinite(value) ? BigDecimal.valueOf(value).stripTrailingZeros().toPlainString()
                : Double.toString(value);
    }
}
