package org.vllmrouter.core.config;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The Java side of the config contract agrees with the Python {@code RouterArgs} it was generated from: same
 * fields in the same order, same JSON types and nullability, and every default reaches the canonical JSON as
 * Python wrote it.
 */
class ConfigContractTest {
    private static final ConfigContract CONTRACT = ConfigContract.get();

    @Test
    void recordComponentsAreTheContractFieldsInOrder() {
        List<String> contractNames = CONTRACT.fields().stream().map(ConfigContract.Field::name).toList();
        assertEquals(contractNames, RouterConfig.jsonFieldNames());
    }

    @Test
    void componentTypesAreTheContractJsonTypes() {
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, RecordComponent> entry : componentsByName().entrySet()) {
            ConfigContract.Field field = CONTRACT.field(entry.getKey());
            RecordComponent component = entry.getValue();
            ConfigContract.JsonType javaType = jsonType(component.getType());
            if (javaType != field.type()) {
                wrong.add(field.name() + ": contract " + field.type() + ", RouterConfig " + component.getType());
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void everyDefaultRoundTripsThroughRouterConfig() throws Exception {
        Map<?, ?> javaDefaults = (Map<?, ?>) JsonValues.read(RouterConfig.defaults().toJson());
        for (ConfigContract.Field field : CONTRACT.fields()) {
            assertEquals(field.defaultValue(), javaDefaults.get(field.name()), field.name());
        }
    }

    @Test
    void canonicalJsonOfTheDefaultsIsTheTextPythonSends() {
        assertEquals(CONTRACT.defaultsJson(), RouterConfig.defaults().toJson());
    }

    /** A Python None is kept as null exactly where the annotation admits None; elsewhere it is refused or empty. */
    @Test
    void nullIsKeptExactlyForNullableFields() throws Exception {
        for (Map.Entry<String, RecordComponent> entry : componentsByName().entrySet()) {
            ConfigContract.Field field = CONTRACT.field(entry.getKey());
            RouterConfig read;
            try {
                read = RouterConfig.fromJson("{\"" + field.name() + "\": null}");
            } catch (ConfigException refused) {
                assertFalse(field.nullable(), field.name() + " is nullable in RouterArgs but null is refused: "
                        + refused.getMessage());
                continue;
            }
            Object value = entry.getValue().getAccessor().invoke(read);
            if (field.nullable()) {
                assertNull(value, field.name());
            } else {
                assertNotNull(value, field.name());
            }
        }
    }

    /**
     * Upstream's validation accepts every choice; the engine refuses the KV connectors it does not build (moriio is
     * skipped here: parsed as upstream does, refused at start; see the validator test).
     */
    @Test
    void everyChoiceOfTheContractIsAccepted() throws Exception {
        for (ConfigContract.Field field : CONTRACT.fields()) {
            for (String choice : field.choices()) {
                if (choice.equals("moriio")) {
                    continue;
                }
                // Two workers: power_of_two needs them.
                String json = "{\"worker_urls\": [\"http://a:1\", \"http://b:1\"], \"" + field.name() + "\": \""
                        + choice + "\"}";
                RouterConfig config = RouterConfig.fromJson(json);
                assertDoesNotThrow(() -> ConfigValidator.validate(config), json);
                if (field.name().equals("kv_connector") && !choice.equals(UnsupportedFeatures.BUILT_KV_CONNECTOR)) {
                    ConfigException e = assertThrows(ConfigException.class, config::validate, json);
                    assertEquals("--kv-connector " + choice + " is not supported by this router (only nixl is built)",
                            e.getMessage());
                } else {
                    assertDoesNotThrow(config::validate, json);
                }
            }
        }
    }

    @Test
    void policyNamesAreTheChoicesOfThePolicyFlags() {
        List<String> policies = CONTRACT.field("policy").choices();
        assertEquals(policies, PolicyNames.ALL);
        assertEquals(policies, CONTRACT.field("prefill_policy").choices());
        assertEquals(policies, CONTRACT.field("decode_policy").choices());
    }

    @Test
    void everyPolicyNameConstantIsAContractName() throws Exception {
        List<String> unknown = new ArrayList<>();
        for (Field constant : PolicyNames.class.getFields()) {
            if (Modifier.isStatic(constant.getModifiers()) && constant.getType() == String.class
                    && !PolicyNames.isKnown((String) constant.get(null))) {
                unknown.add(constant.getName() + " = " + constant.get(null));
            }
        }
        assertEquals(List.of(), unknown);
    }

    @Test
    void prometheusFallbacksAreTheFlagDefaults() throws Exception {
        RouterConfig c = RouterConfig.fromJson("{}");
        assertEquals(((Number) CONTRACT.field("prometheus_port").flagDefault()).intValue(), c.effectivePrometheusPort());
        assertEquals(CONTRACT.field("prometheus_host").flagDefault(), c.effectivePrometheusHost());
    }

    private static ConfigContract.JsonType jsonType(Class<?> type) {
        if (type == int.class || type == long.class || type == Integer.class || type == Long.class) {
            return ConfigContract.JsonType.INTEGER;
        }
        if (type == double.class || type == Double.class) {
            return ConfigContract.JsonType.NUMBER;
        }
        if (type == boolean.class || type == Boolean.class) {
            return ConfigContract.JsonType.BOOLEAN;
        }
        if (type == String.class) {
            return ConfigContract.JsonType.STRING;
        }
        if (List.class.isAssignableFrom(type)) {
            return ConfigContract.JsonType.ARRAY;
        }
        if (Map.class.isAssignableFrom(type)) {
            return ConfigContract.JsonType.OBJECT;
        }
        return fail("no JSON type for " + type);
    }

    private static Map<String, RecordComponent> componentsByName() {
        Map<String, RecordComponent> byName = new LinkedHashMap<>();
        RecordComponent[] components = RouterConfig.class.getRecordComponents();
        List<String> names = RouterConfig.jsonFieldNames();
        for (int i = 0; i < components.length; i++) {
            byName.put(names.get(i), components[i]);
        }
        return byName;
    }
}
