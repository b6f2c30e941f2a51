package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class ConfigValidatorTest {

    /** Upstream's validation alone: some of these ask for features this router refuses afterwards. */
    private static void valid(String json) {
        assertDoesNotThrow(() -> ConfigValidator.validate(RouterConfig.fromJson(json)), json);
    }

    private static void invalid(String json, String message) throws ConfigException {
        RouterConfig c = RouterConfig.fromJson(json);
        ConfigException e = assertThrows(ConfigException.class, c::validate, json);
        assertEquals(message, e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "{}",
            "{\"worker_urls\": [\"http://a:8000\", \"https://b\", \"grpc://c:1\"], \"model_path\": \"m\"}",
            "{\"port\": 0, \"prometheus_port\": 0, \"prometheus_host\": \"0.0.0.0\"}",
            "{\"worker_urls\": [\"http://worker_1:8000\"]}",
            "{\"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", 9000]], \"decode_urls\": [\"http://d:1\"]}",
            "{\"pd_disaggregation\": true, \"service_discovery\": true, \"prefill_selector\": {\"role\": \"p\"}}",
            "{\"service_discovery\": true, \"selector\": {\"app\": \"x\"}, \"policy\": \"power_of_two\"}",
            "{\"disable_retries\": true, \"retry_max_retries\": 0}",
            "{\"disable_circuit_breaker\": true, \"cb_failure_threshold\": 0}",
            "{\"policy\": \"random\", \"cache_threshold\": 5.0}",
            "{\"enable_igw\": true, \"policy\": \"power_of_two\", \"worker_urls\": [\"not a url\"]}",
            "{\"kv_connector\": \"Mooncake\"}",
            "{\"vllm_pd_disaggregation\": true, \"vllm_discovery_address\": \"0.0.0.0:30001\"}",
            "{\"vllm_pd_disaggregation\": true, \"vllm_discovery_address\": \"[::1]:30001\", \"policy\": \"power_of_two\","
                    + " \"prefill_urls\": [[\"http://p:1\", null]]}",
    })
    void acceptsValidConfigs(String json) {
        valid(json);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
            "{\"worker_urls\": [\"\"]}                    | Invalid value for field 'worker_url':  - URL cannot be empty",
            "{\"worker_urls\": [\"ftp://a\"]}             | Invalid value for field 'worker_url': ftp://a - URL must start with http://, https://, or grpc://",
            "{\"worker_urls\": [\"grpc:///x\"], \"model_path\": \"m\"} | Invalid value for field 'worker_url': grpc:///x - URL must have a valid host",
            "{\"worker_urls\": [\"http://\"]}             | Invalid value for field 'worker_url': http:// - Invalid URL format: Expected authority",
            "{\"worker_urls\": [\"http://a b:1\"]}        | Invalid value for field 'worker_url': http://a b:1 - Invalid URL format: Illegal character in authority",
            "{\"vllm_pd_disaggregation\": true, \"decode_urls\": [\"http://d:1\"]} | Validation failed: vLLM PD mode requires at least one prefill worker URL",
            "{\"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", null]]} | Validation failed: vLLM PD mode requires at least one decode worker URL",
            "{\"pd_disaggregation\": true, \"decode_urls\": [\"http://d:1\"]} | Validation failed: PD mode requires at least one prefill worker URL",
            "{\"pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", 0]], \"decode_urls\": [\"http://d:1\"]} | Invalid value for field 'bootstrap_port': 0 - Port must be between 1 and 65535",
            "{\"cache_threshold\": 1.5}                   | Invalid value for field 'cache_threshold': 1.5 - Must be between 0.0 and 1.0",
            "{\"balance_rel_threshold\": 0.5}             | Invalid value for field 'balance_rel_threshold': 0.5 - Must be >= 1.0",
            "{\"eviction_interval_secs\": 0}              | Invalid value for field 'eviction_interval_secs': 0 - Must be > 0",
            "{\"max_tree_size\": 0}                       | Invalid value for field 'max_tree_size': 0 - Must be > 0",
            "{\"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", null]], \"decode_urls\": [\"http://d:1\"], \"policy\": \"random\", \"prefill_policy\": \"cache_aware\", \"cache_threshold\": 2} | Invalid value for field 'cache_threshold': 2 - Must be between 0.0 and 1.0",
            "{\"max_payload_size\": 0}                    | Invalid value for field 'max_payload_size': 0 - Must be > 0",
            "{\"request_timeout_secs\": 0}                | Invalid value for field 'request_timeout_secs': 0 - Must be > 0",
            "{\"worker_startup_timeout_secs\": 0}         | Invalid value for field 'worker_startup_timeout_secs': 0 - Must be > 0",
            "{\"worker_startup_check_interval\": 0}       | Invalid value for field 'worker_startup_check_interval_secs': 0 - Must be > 0",
            "{\"service_discovery\": true, \"service_discovery_port\": 0, \"selector\": {\"a\": \"b\"}} | Invalid value for field 'discovery.port': 0 - Port must be > 0",
            "{\"service_discovery\": true}                | Validation failed: Regular mode with service discovery requires a non-empty selector",
            "{\"vllm_pd_disaggregation\": true, \"service_discovery\": true} | Validation failed: vLLM PD mode with service discovery requires at least one non-empty selector (prefill or decode)",
            "{\"pd_disaggregation\": true, \"service_discovery\": true} | Validation failed: PD mode with service discovery requires at least one non-empty selector (prefill or decode)",
            "{\"prometheus_port\": 9000, \"prometheus_host\": \"\"} | Invalid value for field 'metrics.host':  - Host cannot be empty",
            "{\"worker_urls\": [\"grpc://a:1\"]}          | Validation failed: gRPC connection mode requires either --tokenizer-path or --model-path to be specified",
            "{\"policy\": \"power_of_two\", \"worker_urls\": [\"http://a:1\"]} | Incompatible configuration: Power-of-two policy requires at least 2 workers",
            "{\"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", null]], \"decode_urls\": [\"http://d:1\", \"http://d:2\"], \"policy\": \"random\", \"prefill_policy\": \"power_of_two\"} | Incompatible configuration: Power-of-two policy for prefill requires at least 2 prefill workers",
            "{\"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", null], [\"http://p:2\", null]], \"decode_urls\": [\"http://d:1\"], \"policy\": \"random\", \"decode_policy\": \"power_of_two\"} | Incompatible configuration: Power-of-two policy for decode requires at least 2 decode workers",
            "{\"retry_max_retries\": 0}                   | Invalid value for field 'retry.max_retries': 0 - Must be >= 1 (set to 1 to effectively disable retries)",
            "{\"retry_initial_backoff_ms\": 0}            | Invalid value for field 'retry.initial_backoff_ms': 0 - Must be > 0",
            "{\"retry_initial_backoff_ms\": 100, \"retry_max_backoff_ms\": 50} | Invalid value for field 'retry.max_backoff_ms': 50 - Must be >= initial_backoff_ms",
            "{\"retry_backoff_multiplier\": 0.5}          | Invalid value for field 'retry.backoff_multiplier': 0.5 - Must be >= 1.0",
            "{\"retry_jitter_factor\": 1.5}               | Invalid value for field 'retry.jitter_factor': 1.5 - Must be between 0.0 and 1.0",
            "{\"cb_failure_threshold\": 0}                | Invalid value for field 'circuit_breaker.failure_threshold': 0 - Must be >= 1 (set to u32::MAX to effectively disable CB)",
            "{\"cb_success_threshold\": 0}                | Invalid value for field 'circuit_breaker.success_threshold': 0 - Must be >= 1",
            "{\"cb_timeout_duration_secs\": 0}            | Invalid value for field 'circuit_breaker.timeout_duration_secs': 0 - Must be > 0",
            "{\"cb_window_duration_secs\": 0}             | Invalid value for field 'circuit_breaker.window_duration_secs': 0 - Must be > 0",
            "{\"policy\": \"least_busy\"}                 | Invalid value for field 'policy': least_busy - Unknown policy; expected one of random, round_robin, cache_aware, power_of_two, consistent_hash, sticky_least_loaded, rendezvous_hash",
            "{\"decode_policy\": \"Sticky\"}              | Invalid value for field 'decode_policy': Sticky - Unknown policy; expected one of random, round_robin, cache_aware, power_of_two, consistent_hash, sticky_least_loaded, rendezvous_hash",
            "{\"port\": 70000}                            | Invalid value for field 'port': 70000 - Port must be between 0 and 65535 (0 picks a free port)",
            "{\"queue_size\": -1}                         | Invalid value for field 'queue_size': -1 - Must be >= 0",
            "{\"intra_node_data_parallel_size\": 0}       | Invalid value for field 'intra_node_data_parallel_size': 0 - Must be > 0",
            "{\"vllm_pd_disaggregation\": true, \"vllm_discovery_address\": \"30001\"} | Invalid value for field 'vllm_discovery_address': 30001 - Expected HOST:PORT with a port between 1 and 65535 (e.g. 0.0.0.0:30001)",
            "{\"vllm_pd_disaggregation\": true, \"vllm_discovery_address\": \"h:0\"} | Invalid value for field 'vllm_discovery_address': h:0 - Expected HOST:PORT with a port between 1 and 65535 (e.g. 0.0.0.0:30001)",
            "{\"vllm_pd_disaggregation\": true, \"vllm_discovery_address\": \"::1:5\"} | Invalid value for field 'vllm_discovery_address': ::1:5 - Expected HOST:PORT with a port between 1 and 65535 (e.g. 0.0.0.0:30001)",
    })
    void rejectsWithUpstreamMessage(String json, String detail) throws ConfigException {
        invalid(json, "Configuration validation failed: " + detail);
    }

    @Test
    void kvConnectorErrorUsesTheConfigurationErrorPrefix() throws ConfigException {
        invalid("{\"kv_connector\": \"rdma\"}", "Configuration error: Invalid kv_connector 'rdma': expected 'nixl' or 'mooncake'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "redis://cache", "redis://cache:6379", "redis://cache:6379/0", "redis://cache:6379/",
            "rediss://user:p%40ss@cache.example:6380/3", "redis://:secret@10.0.0.5", "redis://[::1]:6379/15"})
    void acceptsMemoryAndRedisSessionStores(String store) {
        valid("{\"session_store\": \"" + store + "\"}");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "Memory                            | Memory - Must be 'memory' or a redis:// or rediss:// URL",
            "cache:6379                        | cache:6379 - Must be 'memory' or a redis:// or rediss:// URL",
            "http://cache:6379                 | http://cache:6379 - Must be 'memory' or a redis:// or rediss:// URL",
            "redis://                          | redis:// - Invalid URL format: Expected authority",
            "redis://:6379                     | redis://:6379 - URL must have a host, as in redis://host:6379",
            "redis://cache:0                   | redis://cache:0 - Port must be between 1 and 65535",
            "redis://cache:70000               | redis://cache:70000 - Port must be between 1 and 65535",
            "redis://cache:port                | redis://cache:port - URL must have a host, as in redis://host:6379",
            "redis://cache/db1                 | redis://cache/db1 - The path must be empty or a database number, as in redis://host:6379/0",
            "redis://cache/0?timeout=1s        | redis://cache/0?timeout=1s - URL must not have a query or a fragment",
            "redis://user:hunter2@cache/x      | redis://***@cache/x - The path must be empty or a database number, as in redis://host:6379/0",
            "rediss://:hunter2@ca che          | rediss://***@ca che - Invalid URL format: Illegal character in authority",
    })
    void rejectsMalformedSessionStoresWithoutShowingThePassword(String store, String detail) throws ConfigException {
        invalid("{\"session_store\": \"" + store + "\"}",
                "Configuration validation failed: Invalid value for field 'session_store': " + detail);
    }

    @Test
    void emptySessionStoreIsRejected() throws ConfigException {
        invalid("{\"session_store\": \"\"}", "Configuration validation failed: Invalid value for field 'session_store':  - "
                + "Must be 'memory' or a redis:// or rediss:// URL");
    }

    @Test
    void serviceDiscoverySkipsWorkerUrlChecks() {
        valid("{\"service_discovery\": true, \"selector\": {\"a\": \"b\"}, \"worker_urls\": [\"not a url\"]}");
    }

    @Test
    void upstreamOrderModeBeforePolicyBeforeServer() throws ConfigException {
        invalid("{\"worker_urls\": [\"ftp://x\"], \"cache_threshold\": 9, \"request_timeout_secs\": 0}",
                "Configuration validation failed: Invalid value for field 'worker_url': ftp://x - URL must start with http://, https://, or grpc://");
        invalid("{\"cache_threshold\": 9, \"request_timeout_secs\": 0}",
                "Configuration validation failed: Invalid value for field 'cache_threshold': 9 - Must be between 0.0 and 1.0");
    }
}
