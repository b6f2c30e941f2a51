package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Flags of upstream's surface whose feature this router does not build: refused with one line, defaults accepted. */
class UnsupportedFeaturesTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "{\"mini_lb\": true}                      | --mini-lb is not supported by this router (upstream's Python debug balancer is not part of this package; use --vllm-pd-disaggregation)",
            "{\"enable_igw\": true}                   | --enable-igw is not supported by this router (the multi-model inference-gateway mode is not built)",
            "{\"model_path\": \"/models/llama\"}      | --model-path is not supported by this router (gRPC mode, which loads the tokenizer, is not built)",
            "{\"tokenizer_path\": \"/tok\"}           | --tokenizer-path is not supported by this router (gRPC mode, which loads the tokenizer, is not built)",
            "{\"kv_connector\": \"mooncake\"}         | --kv-connector mooncake is not supported by this router (only nixl is built)",
            "{\"worker_urls\": [\"grpc://w:9000\"], \"model_path\": \"m\"} | --worker-urls grpc://w:9000 is not supported by this router (gRPC workers are not built; give the worker's HTTP URL)",
            "{\"vllm_pd_disaggregation\": true, \"prefill_urls\": [[\"grpc://p:1\", null]], \"decode_urls\": [\"http://d:1\"], \"tokenizer_path\": \"t\"} | --prefill grpc://p:1 is not supported by this router (gRPC workers are not built; give the worker's HTTP URL)",
    })
    void refusesWithOneLineNamingTheFlag(String json, String message) throws ConfigException {
        RouterConfig config = RouterConfig.fromJson(json);
        ConfigException e = assertThrows(ConfigException.class, config::validate, json);
        assertEquals(message, e.getMessage());
    }

    @Test
    void theDefaultsOfTheseFlagsPass() {
        assertDoesNotThrow(() -> RouterConfig.defaults().validate());
        assertDoesNotThrow(() -> RouterConfig.fromJson("{\"mini_lb\": false, \"enable_igw\": false, \"model_path\": null,"
                + " \"tokenizer_path\": null, \"kv_connector\": \"NIXL\", \"worker_urls\": [\"https://w:8443\"]}").validate());
    }

    @Test
    void upstreamsMessageComesFirst() throws ConfigException {
        RouterConfig config = RouterConfig.fromJson("{\"worker_urls\": [\"grpc://w:1\"]}");
        ConfigException e = assertThrows(ConfigException.class, config::validate);
        assertEquals("Configuration validation failed: Validation failed: gRPC connection mode requires either "
                + "--tokenizer-path or --model-path to be specified", e.getMessage());
    }
}
