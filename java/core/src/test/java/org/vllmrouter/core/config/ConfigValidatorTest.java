package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
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
            "{\"worker_urls\": [\"http://[::1]:8000\", \"http://[::1]\", \"http://w:65535\", \"http://u@w:1\"]}",
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
            "{\"worker_urls\": [\"http://127.0.0.1:0\"]}  | Invalid value for field 'worker_url': http://127.0.0.1:0 - Port must be between 1 and 65535",
            "{\"worker_urls\": [\"http://w:70000\"]}      | Invalid value for field 'worker_url': http://w:70000 - Port must be between 1 and 65535",
            "{\"worker_urls\": [\"http://[::1]:0\"]}      | Invalid value for field 'worker_url': http://[::1]:0 - Port must be between 1 and 65535",
            "{\"worker_urls\": [\"http://:8000\"]}        | Invalid value for field 'worker_url': http://:8000 - URL must have a valid host",
            "{\"decode_urls\": [\"http://d:0\"], \"prefill_urls\": [[\"http://p:1\", null]], \"pd_disaggregation\": true} | Invalid value for field 'worker_url': http://d:0 - Port must be between 1 and 65535",
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
            "{\"policy\": \"least_busy\"}                 | Invalid value for field 'policy': least_busy - Unknown policy; expected one of random, round_robin, cache_aware, kv_aware, power_of_two, consistent_hash, sticky_least_loaded, rendezvous_hash, sticky_balanced",
            "{\"decode_policy\": \"Sticky\"}              | Invalid value for field 'decode_policy': Sticky - Unknown policy; expected one of random, round_robin, cache_aware, kv_aware, power_of_two, consistent_hash, sticky_least_loaded, rendezvous_hash, sticky_balanced",
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
        invalid("{\"kv_connector\": \"rdma\"}", "Configuration error: Invalid kv_connector 'rdma': expected 'nixl' or 'mooncake' or 'moriio'");
    }

    @ParameterizedTest
    @ValueSource(ints = {0, -5, 31_536_001})
    void kvAwareSessionAffinityTtlOutsideOneSecondToOneYearIsRefusedWithUpstreamsMessage(int ttl)
            throws ConfigException {
        invalid("{\"worker_urls\": [\"http://a:1\"], \"policy\": \"kv_aware\", "
                + "\"kv_aware_session_affinity_ttl_secs\": " + ttl + "}",
                "kv_aware_session_affinity_ttl_secs must be between 1 and 31536000");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 31_536_000})
    void kvAwareSessionAffinityTtlIsAcceptedWithAnyPolicy(int ttl) {
        valid("{\"worker_urls\": [\"http://a:1\"], \"kv_aware_session_affinity_ttl_secs\": " + ttl + "}");
        valid("{\"worker_urls\": [\"http://a:1\"], \"policy\": \"kv_aware\", "
                + "\"kv_aware_session_affinity_ttl_secs\": " + ttl + "}");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"kv_connector\": \"moriio\"}|MoRI-IO KV connector requires service discovery to be enabled (ZMQ addresses are obtained via instance registration). Please run with `--vllm-discovery-address ${address}`",
        "{\"kv_connector\": \"MoRIIO\", \"vllm_pd_disaggregation\": true, \"vllm_discovery_address\": \"127.0.0.1:5000\"}|--kv-connector MoRIIO is not supported by this router (only nixl is built)",
        "{\"enable_program_scheduling\": true}|--enable-program-scheduling is not supported by this router (program scheduling is not built)",
        "{\"program_scheduling_config_json\": \"{}\"}|program_scheduling_config_json requires enable_program_scheduling",
        "{\"enable_program_scheduling\": true, \"program_scheduling_config_json\": \"{}\"}|--enable-program-scheduling is not supported by this router (program scheduling is not built)",
        "{\"wasm_middleware\": \"m.wasm\"}|--wasm-middleware is not supported by this router (WASM middleware is not built)",
        "{\"wasm_middleware_sha256\": \"ab\"}|--wasm-middleware-sha256 is not supported by this router (WASM middleware is not built)",
        "{\"wasm_middleware_routes\": [\"/v1/completions\"]}|--wasm-middleware-route is not supported by this router (WASM middleware is not built)",
        "{\"policy\": \"kv_aware\", \"router_temperature\": -1}|Configuration validation failed: Invalid value for field 'router_temperature': -1 - Must be finite and >= 0.0",
        "{\"policy\": \"kv_aware\", \"kv_penalty_host\": 1.5}|Configuration validation failed: Invalid value for field 'kv_penalty_host': 1.5 - Must be finite and between 0.0 and 1.0",
        "{\"prefill_policy\": \"kv_aware\", \"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", null]], \"decode_urls\": [\"http://d:1\"], \"kv_penalty_disk\": -0.1}|Configuration validation failed: Invalid value for field 'kv_penalty_disk': -0.1 - Must be finite and between 0.0 and 1.0",
        "{\"policy\": \"sticky_balanced\", \"sticky_balanced_group_margin\": -0.5}|Configuration validation failed: Invalid value for field 'sticky_balanced_group_margin': -0.5 - Must be finite and >= 0.0",
        "{\"policy\": \"sticky_balanced\", \"sticky_balanced_move_margin\": -1}|Configuration validation failed: Invalid value for field 'sticky_balanced_move_margin': -1 - Must be finite and >= 0.0",
        "{\"policy\": \"sticky_balanced\", \"sticky_balanced_move_kv_usage\": 1.5}|Configuration validation failed: Invalid value for field 'sticky_balanced_move_kv_usage': 1.5 - Must be finite and between 0.0 and 1.0",
        "{\"policy\": \"sticky_balanced\", \"sticky_balanced_tool_hold_secs\": -1}|Configuration validation failed: Invalid value for field 'sticky_balanced_tool_hold_secs': -1 - Must be finite and between 0.0 and 3600.0",
        "{\"decode_policy\": \"sticky_balanced\", \"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", null]], \"decode_urls\": [\"http://d:1\"], \"sticky_balanced_tool_hold_secs\": 3601}|Configuration validation failed: Invalid value for field 'sticky_balanced_tool_hold_secs': 3601 - Must be finite and between 0.0 and 3600.0",
        "{\"prefill_policy\": \"sticky_balanced\", \"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", null]], \"decode_urls\": [\"http://d:1\"], \"sticky_balanced_group_margin\": -1}|Configuration validation failed: Invalid value for field 'sticky_balanced_group_margin': -1 - Must be finite and >= 0.0",
    })
    void zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart(String json, String message) {
        ConfigException e = assertThrows(ConfigException.class,
                () -> RouterConfig.fromJson(json.contains("prefill_urls") ? json
                        : "{\"worker_urls\": [\"http://a:1\"], " + json.substring(1)).validate());
        assertEquals(message, e.getMessage());
    }

    private static final String KV = "{\"worker_urls\": [\"http://a:1\", \"http://b:1\"], \"policy\": \"kv_aware\", "
            + "\"kv_event_model\": \"m\", ";

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"worker_urls\": [\"http://a:1\"], \"policy\": \"kv_aware\", \"kv_event_source\": [\"http://a:1=tcp://a:1\"]}|static KV event sources require worker URLs and model identity",
        "{\"worker_urls\": [\"http://a:1\"], \"kv_event_model\": \"\", \"kv_event_source\": [\"http://a:1=tcp://a:1\"]}|static KV event sources require worker URLs and model identity",
        "{\"worker_urls\": [\"http://a:1\"], \"kv_event_model\": \"m\", \"kv_event_source\": [\"http://a:1=tcp://a:1\"]}|--kv-event-source requires the kv_aware policy",
        "KV\"kv_event_source\": [\"http://a:1\"]}|--kv-event-source expects WORKER_URL=ENDPOINT[,ENDPOINT...], got 'http://a:1'",
        "KV\"kv_event_source\": [\"http://a:1=tcp://a:1\", \"http://a:1=tcp://a:2\"]}|duplicate --kv-event-source worker URL 'http://a:1'",
        "KV\"kv_event_source\": [\"http://a:1/=tcp://a:1\"]}|static KV event source worker 'http://a:1/' is not in --worker-urls",
        "KV\"kv_event_source\": [\"http://a:1=ipc:///tmp/kv\"]}|KV endpoint must be tcp://HOST:PORT without credentials or paths",
        "KV\"kv_event_source\": [\"http://a:1=tcp://a:0\"]}|KV endpoint must be tcp://HOST:PORT without credentials or paths",
        "KV\"kv_event_source\": [\"http://a:1=tcp://a:5557/x\"]}|KV endpoint must be tcp://HOST:PORT without credentials or paths",
        "KV\"kv_event_source\": [\"http://a:1=tcp://*:5557\"]}|KV connect host cannot be a wildcard",
        "KV\"kv_event_source\": [\"http://a:1=tcp://0.0.0.0:5557\"]}|KV connect host cannot be unspecified",
        "KV\"kv_event_source\": [\"http://a:1=tcp://[::]:5557\"]}|KV connect host cannot be unspecified",
        "KV\"kv_event_source\": [\"http://a:1=tcp://a:1\"], \"kv_event_block_size\": 0}|static KV event source for 'http://a:1' needs a nonzero block size and at least one endpoint",
        "KV\"kv_event_source\": [\"http://a:1=tcp://a:1\"], \"kv_event_replay_source\": [\"http://b:1=tcp://b:2\"]}|--kv-event-replay-source worker 'http://b:1' has no --kv-event-source",
        "KV\"kv_event_source\": [\"http://a:1=tcp://a:1,tcp://a:2\"], \"kv_event_replay_source\": [\"http://a:1=tcp://a:3\"]}|static KV replay endpoint count for 'http://a:1' must match its event endpoint count",
    })
    void staticKvEventSourcesAreCheckedWithUpstreamsMessages(String json, String message) {
        ConfigException e = assertThrows(ConfigException.class,
                () -> RouterConfig.fromJson(json.startsWith("KV") ? KV + json.substring(2) : json).validate());
        assertEquals(message, e.getMessage());
    }

    private static final String PD = "{\"vllm_pd_disaggregation\": true, \"prefill_policy\": \"kv_aware\", "
            + "\"prefill_urls\": [[\"http://p:1\", null], [\"http://q:1\", null]], \"decode_urls\": [\"http://d:1\"], ";

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"worker_urls\": [\"http://p:1\"], \"policy\": \"kv_aware\", \"pd_kv_events\": [\"http://p:1=tcp://p:5557\"]}|pd_kv_event_sources requires vllm_prefill_decode mode",
        "{\"pd_disaggregation\": true, \"prefill_policy\": \"kv_aware\", \"prefill_urls\": [[\"http://p:1\", null]], \"decode_urls\": [\"http://d:1\"], \"pd_kv_events\": [\"http://p:1=tcp://p:5557\"]}|pd_kv_event_sources requires vllm_prefill_decode mode",
        "{\"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"http://p:1\", null]], \"decode_urls\": [\"http://d:1\"], \"pd_kv_events\": [\"http://p:1=tcp://p:5557\"]}|pd_kv_event_sources requires a kv_aware prefill policy (other policies never start KV event subscribers)",
        "{\"vllm_pd_disaggregation\": true, \"policy\": \"kv_aware\", \"prefill_policy\": \"round_robin\", \"prefill_urls\": [[\"http://p:1\", null]], \"decode_urls\": [\"http://d:1\"], \"pd_kv_events\": [\"http://p:1=tcp://p:5557\"]}|pd_kv_event_sources requires a kv_aware prefill policy (other policies never start KV event subscribers)",
        "PD\"pd_kv_events\": [\"http://p:1@0=tcp://p:5557\"]}|pd_kv_event_sources key 'http://p:1@0' is not a configured prefill URL (use the base URL without the '@rank' suffix)",
        "PD\"pd_kv_events\": [\"http://d:1=tcp://d:5557\"]}|pd_kv_event_sources key 'http://d:1' is not a configured prefill URL (use the base URL without the '@rank' suffix)",
        "PD\"pd_kv_events\": [\"http://p:1=tcp://*:5557\"]}|pd_kv_event_sources['http://p:1'] endpoint 'tcp://*:5557' must be a reachable ZMQ address (tcp://HOST:PORT or ipc://PATH)",
        "PD\"pd_kv_events\": [\"http://p:1=tcp://p:5557,tcp://0.0.0.0:5558\"]}|pd_kv_event_sources['http://p:1'] endpoint 'tcp://0.0.0.0:5558' must be a reachable ZMQ address (tcp://HOST:PORT or ipc://PATH)",
        "PD\"pd_kv_events\": [\"http://p:1=tcp://p:0\"]}|pd_kv_event_sources['http://p:1'] endpoint 'tcp://p:0' must be a reachable ZMQ address (tcp://HOST:PORT or ipc://PATH)",
        "PD\"pd_kv_events\": [\"http://p:1=http://p:5557\"]}|pd_kv_event_sources['http://p:1'] endpoint 'http://p:5557' must be a reachable ZMQ address (tcp://HOST:PORT or ipc://PATH)",
        "PD\"pd_kv_events\": [\"http://p:1=ipc://\"]}|pd_kv_event_sources['http://p:1'] endpoint 'ipc://' must be a reachable ZMQ address (tcp://HOST:PORT or ipc://PATH)",
        "PD\"pd_kv_events\": [\"http://p:1=\"]}|pd_kv_event_sources['http://p:1'] endpoint '' must be a reachable ZMQ address (tcp://HOST:PORT or ipc://PATH)",
        "PD\"pd_kv_events\": [\"http://p:1\"]}|--pd-kv-events expects WORKER_URL=ENDPOINT[,ENDPOINT...], got 'http://p:1'",
        "{\"worker_urls\": [\"http://p:1\"], \"pd_kv_events\": [\"=tcp://p:5557\"]}|--pd-kv-events expects WORKER_URL=ENDPOINT[,ENDPOINT...], got '=tcp://p:5557'",
        "PD\"pd_kv_events\": [\"http://p:1=tcp://p:5557\", \"http://p:1=tcp://p:5558\"]}|duplicate --pd-kv-events worker URL 'http://p:1'",
        "PD\"pd_kv_events\": [\"http://p:1=tcp://p:5557,ipc:///tmp/p-kv\"]}|pd_kv_event_sources['http://p:1'] endpoint 'ipc:///tmp/p-kv': ipc:// is not supported by this router (its ZMQ client cannot reach a Unix socket); use tcp://HOST:PORT",
    })
    void pdKvEventSourcesAreCheckedWithUpstreamsMessages(String json, String message) {
        ConfigException e = assertThrows(ConfigException.class,
                () -> RouterConfig.fromJson(json.startsWith("PD") ? PD + json.substring(2) : json).validate());
        assertEquals(message, e.getMessage());
    }

    @Test
    void pdKvEventSourcesThatCheckOutAreAcceptedInDpRankOrder() throws Exception {
        RouterConfig c = RouterConfig.fromJson(PD + "\"pd_kv_events\": [\"http://q:1=tcp://q:5557\", "
                + "\"http://p:1=tcp://localhost:5557,tcp://[::1]:5558\"]}");
        c.validate();
        Map<String, StaticKvSources.Source> sources = StaticKvSources.of(c);
        assertEquals(List.of("tcp://localhost:5557", "tcp://[::1]:5558"), sources.get("http://p:1").endpoints());
        assertEquals(List.of("tcp://q:5557"), sources.get("http://q:1").endpoints());
        assertEquals(List.of(), sources.get("http://p:1").replayEndpoints());
    }

    @Test
    void staticKvEventSourcesThatCheckOutAreAccepted() throws Exception {
        RouterConfig.fromJson(KV + "\"kv_event_source\": [\"http://a:1=tcp://localhost:5557,tcp://127.0.0.1:5558\"], "
                + "\"kv_event_replay_source\": [\"http://a:1=tcp://localhost:5559,tcp://[::1]:5560\"]}").validate();
    }

    @Test
    void kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed() throws Exception {
        RouterConfig.fromJson("{\"worker_urls\": [\"http://a:1\"], \"router_temperature\": -1, \"kv_penalty_host\": 2}")
                .validate();
    }

    @Test
    void staticKvEventSourcesServeStickyBalancedOnlyWhenItGroupsByKv() throws Exception {
        String sources = "{\"worker_urls\": [\"http://a:1\"], \"policy\": \"sticky_balanced\", \"kv_event_model\": \"m\", "
                + "\"kv_event_source\": [\"http://a:1=tcp://a:5557\"]";
        RouterConfig.fromJson(sources + ", \"sticky_balanced_group_by_kv\": true}").validate();
        ConfigException e = assertThrows(ConfigException.class, () -> RouterConfig.fromJson(sources + "}").validate());
        assertEquals("--kv-event-source requires the kv_aware policy", e.getMessage());
    }

    @Test
    void stickyBalancedParametersAreCheckedOnlyWhenStickyBalancedIsUsed() throws Exception {
        RouterConfig.fromJson("{\"worker_urls\": [\"http://a:1\"], \"sticky_balanced_group_margin\": -1, "
                + "\"sticky_balanced_move_margin\": -1, \"sticky_balanced_move_kv_usage\": 2, "
                + "\"sticky_balanced_tool_hold_secs\": -1}").validate();
        RouterConfig.fromJson("{\"worker_urls\": [\"http://a:1\"], \"policy\": \"sticky_balanced\", "
                + "\"sticky_balanced_group_margin\": 0, \"sticky_balanced_group_separator\": \"\"}").validate();
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
