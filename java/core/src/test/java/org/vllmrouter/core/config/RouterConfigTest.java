package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RouterConfigTest {
    /** The canonical field order of /work/contract.md. */
    private static final List<String> FIELDS = List.of("worker_urls", "host", "port", "mini_lb", "pd_disaggregation",
            "vllm_pd_disaggregation", "prefill_urls", "decode_urls", "policy", "prefill_policy", "decode_policy",
            "worker_startup_timeout_secs", "worker_startup_check_interval", "cache_threshold", "balance_abs_threshold",
            "balance_rel_threshold", "eviction_interval_secs", "max_tree_size", "max_payload_size",
            "intra_node_data_parallel_size", "enable_igw", "api_key", "log_dir", "log_level", "service_discovery",
            "selector", "service_discovery_port", "service_discovery_namespace", "prefill_selector", "decode_selector",
            "bootstrap_port_annotation", "vllm_discovery_address", "kv_connector", "prometheus_port", "prometheus_host", "request_id_headers",
            "request_timeout_secs", "max_concurrent_requests", "queue_size", "queue_timeout_secs",
            "rate_limit_tokens_per_second", "cors_allowed_origins", "retry_max_retries", "retry_initial_backoff_ms",
            "retry_max_backoff_ms", "retry_backoff_multiplier", "retry_jitter_factor", "disable_retries",
            "health_failure_threshold", "health_success_threshold", "health_check_timeout_secs",
            "health_check_interval_secs", "health_check_endpoint", "cb_failure_threshold", "cb_success_threshold",
            "cb_timeout_duration_secs", "cb_window_duration_secs", "disable_circuit_breaker", "model_path",
            "tokenizer_path", "api_key_validation_urls", "admin_api_key");

    @Test
    void emptyObjectGivesTheDataclassDefaults() throws Exception {
        RouterConfig c = RouterConfig.fromJson("{}");
        assertEquals(RouterConfig.defaults(), c);
        assertEquals("127.0.0.1", c.host());
        assertEquals(30000, c.port());
        assertEquals("cache_aware", c.policy());
        assertEquals(0.3, c.cacheThreshold());
        assertEquals(67108864L, c.maxTreeSize());
        assertEquals(536870912L, c.maxPayloadSize());
        assertEquals("vllm.ai/bootstrap-port", c.bootstrapPortAnnotation());
        assertEquals("/health", c.healthCheckEndpoint());
        assertNull(c.prometheusPort());
        assertEquals(29000, c.effectivePrometheusPort());
        assertEquals("127.0.0.1", c.effectivePrometheusHost());
        assertEquals(List.of(), c.workerUrls());
        assertEquals(Map.of(), c.selector());
        assertNull(c.requestIdHeaders());
    }

    @Test
    void toJsonHasEveryFieldInCanonicalOrderAndRoundTrips() throws Exception {
        RouterConfig c = RouterConfig.fromJson("{\"worker_urls\": [\"http://a:1\"], \"prefill_urls\": [[\"http://p:1\", 8998],"
                + " [\"http://p:2\", null]], \"selector\": {\"app\": \"vllm\"}, \"policy\": \"sticky_least_loaded\","
                + " \"request_id_headers\": [\"x-req\"], \"cache_threshold\": 1}");
        JsonNode tree = new ObjectMapper().readTree(c.toJson());
        List<String> names = new ArrayList<>();
        tree.fieldNames().forEachRemaining(names::add);
        assertEquals(FIELDS, names);
        assertEquals("[[\"http://p:1\",8998],[\"http://p:2\",null]]", tree.get("prefill_urls").toString());
        assertEquals(1.0, c.cacheThreshold());
        assertEquals(c, RouterConfig.fromJson(c.toJson()));
        assertEquals(RouterConfig.defaults().toJson(), RouterConfig.fromJson("{}").toJson());
    }

    @Test
    void unknownFieldIsNamed() {
        ConfigException e = assertThrows(ConfigException.class, () -> RouterConfig.fromJson("{\"port\": 1, \"foo\": 2}"));
        assertEquals("Unknown config field 'foo'", e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
            "{\"port\": \"8000\"}               | port",
            "{\"port\": 1.5}                    | port",
            "{\"port\": null}                   | port",
            "{\"port\": 99999999999}            | port",
            "{\"mini_lb\": 1}                   | mini_lb",
            "{\"host\": 5}                      | host",
            "{\"host\": null}                   | host",
            "{\"worker_urls\": \"http://a:1\"}  | worker_urls",
            "{\"cache_threshold\": \"0.5\"}     | cache_threshold",
            "{\"selector\": [\"a\"]}            | selector",
            "{\"prometheus_port\": \"x\"}       | prometheus_port",
    })
    void wrongTypeNamesTheField(String json, String field) {
        ConfigException e = assertThrows(ConfigException.class, () -> RouterConfig.fromJson(json));
        assertTrue(e.getMessage().contains("'" + field + "'"), e.getMessage());
    }

    @Test
    void invalidJsonAndNonObjectsAreRejected() {
        assertTrue(assertThrows(ConfigException.class, () -> RouterConfig.fromJson("{")).getMessage()
                .startsWith("Invalid config JSON"));
        assertTrue(assertThrows(ConfigException.class, () -> RouterConfig.fromJson("[]")).getMessage()
                .contains("expected a JSON object"));
    }

    @Test
    void nullListsAndMapsMeanEmpty() throws Exception {
        RouterConfig c = RouterConfig.fromJson("{\"worker_urls\": null, \"selector\": null, \"request_id_headers\": null}");
        assertEquals(List.of(), c.workerUrls());
        assertEquals(Map.of(), c.selector());
        assertNull(c.requestIdHeaders());
    }

    @Test
    void collectionsAreImmutable() throws Exception {
        RouterConfig c = RouterConfig.fromJson("{\"worker_urls\": [\"http://a:1\"]}");
        assertThrows(UnsupportedOperationException.class, () -> c.workerUrls().add("http://b:1"));
    }
}
