package org.vllmrouter.core.settings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;

class TracingSettingsTest {

    private static TracingSettings settings(String fields, Map<String, String> variables) throws ConfigException {
        return TracingSettings.from(RouterConfig.fromJson(fields), StartEnvironment.of(variables, Map.of()));
    }

    private static TracingSettings enabled(String endpoint, Map<String, String> variables) throws ConfigException {
        return settings("{\"enable_trace\":true" + (endpoint == null ? "" : ",\"otlp_traces_endpoint\":\"" + endpoint + "\"")
                + "}", variables);
    }

    @Test
    void offByDefaultWithUpstreamsExcludedPaths() throws ConfigException {
        TracingSettings off = settings("{}", Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"));
        assertFalse(off.enabled());
        assertNull(off.endpoint());
        assertEquals(1.0, off.samplingRatio());
        assertEquals(Set.of("/health", "/health_generate", "/liveness", "/readiness"), off.excludedPaths());
        assertFalse(off.traces("/v1/chat/completions"));
    }

    @Test
    void theEndpointIsUpstreamsHostPortGetsHttpAndUnsetFallsBackToTheVariable() throws ConfigException {
        assertEquals("http://collector:4317", enabled("collector:4317", Map.of()).endpoint());
        assertEquals("https://c.example:443/x", enabled("https://c.example:443/x", Map.of()).endpoint());
        assertEquals("http://from-env:4317",
                enabled(null, Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://from-env:4317")).endpoint());
        assertEquals("http://flag:1", enabled("flag:1", Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:2")).endpoint());
        assertEquals("http://localhost:4317", enabled(null, Map.of()).endpoint());
        TracingSettings on = enabled("collector:4317", Map.of());
        assertEquals(TracingSettings.Protocol.GRPC, on.protocol());
        assertTrue(on.traces("/v1/chat/completions"));
        assertFalse(on.traces("/health"));
    }

    @Test
    void httpProtobufAddsTheTracesPathUnlessTheSignalVariableNamedIt() throws ConfigException {
        Map<String, String> http = Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
        assertEquals("http://c:4318/v1/traces", enabled("c:4318", http).endpoint());
        assertEquals("http://c:4318/custom", enabled("http://c:4318/custom", http).endpoint());
        assertEquals("http://localhost:4318/v1/traces", enabled(null, http).endpoint());
        assertEquals("http://c:9/as-is", enabled(null, Map.of("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:9/as-is")).endpoint());
    }

    @Test
    void theStandardVariablesNameTheServiceAndTheExportHeaders() throws ConfigException {
        TracingSettings on = enabled("c:1", Map.of("OTEL_SERVICE_NAME", "router-a",
                "OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t,x-team=rl"));
        assertEquals("router-a", on.serviceName());
        assertEquals(Map.of("authorization", "Bearer t", "x-team", "rl"), on.headers());
        assertEquals(TracingSettings.DEFAULT_SERVICE_NAME, enabled("c:1", Map.of()).serviceName());
    }

    @Test
    void aMalformedEndpointIsUpstreamsExporterError() {
        for (String bad : new String[] {"http://bad host:4317", "ftp://collector:21", "http://:4317", "c:99999"}) {
            ConfigException e = assertThrows(ConfigException.class, () -> enabled(bad, Map.of()), bad);
            assertTrue(e.getMessage().startsWith("Failed to create OTLP exporter: invalid URI "), e.getMessage());
            assertTrue(e.getMessage().contains(bad), e.getMessage());
        }
        ConfigException env = assertThrows(ConfigException.class,
                () -> enabled(null, Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x:1")));
        assertTrue(env.getMessage().startsWith("Failed to create OTLP exporter: invalid URI"), env.getMessage());
    }

    @Test
    void aSamplingRatioOutsideZeroToOneIsUpstreamsError() {
        for (String ratio : new String[] {"1.5", "-0.1", "2"}) {
            ConfigException e = assertThrows(ConfigException.class,
                    () -> settings("{\"otel_sampling_ratio\":" + ratio + "}", Map.of()));
            assertEquals("OTel sampling_ratio must be within [0.0, 1.0], got " + ratio, e.getMessage());
        }
    }

    @Test
    void badProtocolOrHeadersAreStartErrors() {
        ConfigException protocol = assertThrows(ConfigException.class,
                () -> enabled("c:1", Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")));
        assertEquals("Unsupported OTLP protocol 'http/json' in OTEL_EXPORTER_OTLP_PROTOCOL: expected grpc or "
                + "http/protobuf", protocol.getMessage());
        ConfigException headers = assertThrows(ConfigException.class,
                () -> enabled("c:1", Map.of("OTEL_EXPORTER_OTLP_HEADERS", "novalue")));
        assertTrue(headers.getMessage().contains("expected key=value"), headers.getMessage());
    }
}
