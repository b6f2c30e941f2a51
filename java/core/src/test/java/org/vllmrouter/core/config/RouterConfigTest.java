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
        assertEquals(ConfigContract.get().fields().stream().map(ConfigContract.Field::name).toList(), names);
        assertEquals("[[\"http://p:1\",8998],[\"http://p:2\",null]]", tree.get("prefill_urls").toString());
        assertEquals(1.0, c.cacheThreshold());
        assertEquals(c, RouterConfig.fromJson(c.toJson()));
        assertEquals(RouterConfig.defaults().toJson(), RouterConfig.fromJson("{}").toJson());
    }

    @ParameterizedTest
    @CsvSource({
            "false, false, NONE",
            "true,  false, SGLANG_BOOTSTRAP",
            "false, true,  VLLM",
            "true,  true,  VLLM",
    })
    void pdModeComesFromTheTwoFlags(boolean pd, boolean vllmPd, PdMode expected) throws Exception {
        RouterConfig c = RouterConfig.fromJson(
                "{\"pd_disaggregation\": " + pd + ", \"vllm_pd_disaggregation\": " + vllmPd + "}");
        assertEquals(expected, c.pdMode());
        assertEquals(expected != PdMode.NONE, c.isPdMode());
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

    /** The message shows the value as given and what the field takes, on one line. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
            "{\"port\": \"8000\"}                  | 'port': \"8000\" (expected a whole number)",
            "{\"port\": 1.5}                       | 'port': 1.5 (expected a whole number)",
            "{\"port\": 2147483648}                | 'port': 2147483648 (out of range of a 32-bit integer)",
            "{\"port\": null}                      | 'port': null (null is not allowed here)",
            "{\"max_tree_size\": 1e3}              | 'max_tree_size': 1000.0 (expected a whole number)",
            "{\"max_tree_size\": 99999999999999999999} | 'max_tree_size': 99999999999999999999 (out of range of a 64-bit integer)",
            "{\"cache_threshold\": true}           | 'cache_threshold': true (expected a number)",
            "{\"mini_lb\": 0}                      | 'mini_lb': 0 (expected true or false)",
            "{\"host\": [\"a\"]}                   | 'host': [\"a\"] (expected a string)",
            "{\"worker_urls\": [\"http://a:1\", null]} | 'worker_urls': [\"http://a:1\",null] (expected an array of strings)",
            "{\"worker_urls\": {\"a\": \"b\"}}       | 'worker_urls': {\"a\":\"b\"} (expected an array of strings)",
            "{\"selector\": {\"app\": 1}}           | 'selector': {\"app\":1} (expected an object of strings)",
            "{\"session_id_headers\": null}        | 'session_id_headers': null (null is not allowed here)",
            "{\"prefill_urls\": [[\"http://p:1\", \"8998\"]]} | 'prefill_urls': [[\"http://p:1\",\"8998\"]] (expected a whole number)",
            "{\"prefill_urls\": [[1, 2]]}          | 'prefill_urls': [[1,2]] (expected an array of [url, bootstrap_port] pairs)",
            "{\"prefill_urls\": [\"http://p:1\"]}   | 'prefill_urls': [\"http://p:1\"] (expected an array of [url, bootstrap_port] pairs)",
    })
    void wrongValueMessageShowsTheValueAndTheExpectedType(String json, String expected) {
        ConfigException e = assertThrows(ConfigException.class, () -> RouterConfig.fromJson(json));
        assertEquals("Invalid value for config field " + expected, e.getMessage());
    }

    @Test
    void firstWrongFieldInCanonicalOrderIsTheOneNamed() {
        ConfigException e = assertThrows(ConfigException.class,
                () -> RouterConfig.fromJson("{\"max_sessions\": \"x\", \"port\": \"y\"}"));
        assertTrue(e.getMessage().startsWith("Invalid value for config field 'port'"), e.getMessage());
    }

    @Test
    void prefillUrlMayOmitItsBootstrapPort() throws Exception {
        RouterConfig c = RouterConfig.fromJson("{\"prefill_urls\": [[\"http://p:1\"], [\"http://p:2\", 9000]]}");
        assertEquals(List.of(new PrefillUrl("http://p:1", null), new PrefillUrl("http://p:2", 9000)), c.prefillUrls());
    }

    @Test
    void laterDuplicateFieldWins() throws Exception {
        assertEquals(2, RouterConfig.fromJson("{\"port\": 1, \"port\": 2}").port());
    }

    @Test
    void invalidJsonAndNonObjectsAreRejected() {
        assertTrue(assertThrows(ConfigException.class, () -> RouterConfig.fromJson("{} {}")).getMessage()
                .startsWith("Invalid config JSON: Trailing token"));
        assertEquals("Invalid config JSON: expected a JSON object",
                assertThrows(ConfigException.class, () -> RouterConfig.fromJson("")).getMessage());
        assertEquals("Invalid config JSON: expected a JSON object",
                assertThrows(ConfigException.class, () -> RouterConfig.fromJson("5")).getMessage());
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
