package org.vllmrouter.core.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * The configuration fields as the Python {@code RouterArgs} dataclass defines them, generated from it when
 * this module is built ({@code python3 -m vllm_router.config_contract}, see docs/architecture.md, 'The config
 * contract'). The engine takes the fields' defaults and the policy names from here instead of repeating them.
 *
 * @param fields every field in dataclass order, which is the canonical JSON order
 * @param defaultsJson the exact JSON text Python sends for {@code RouterArgs()}
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
record ConfigContract(List<Field> fields, String defaultsJson) {
    static final String RESOURCE = "router-config-contract.json";

    private static final ConfigContract LOADED = load();

    /** The JSON types a field's Python annotation maps to. */
    enum JsonType {
        @JsonProperty("string") STRING,
        @JsonProperty("integer") INTEGER,
        @JsonProperty("number") NUMBER,
        @JsonProperty("boolean") BOOLEAN,
        @JsonProperty("array") ARRAY,
        @JsonProperty("object") OBJECT
    }

    /**
     * One field.
     *
     * @param nullable whether the annotation admits None
     * @param flagDefault the command line's default where it differs from {@code defaultValue}, else null
     * @param choices the values the field's flag accepts when it is restricted to a set, else empty
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Field(String name, JsonType type, boolean nullable, @JsonProperty("default") JsonNode defaultValue,
                 JsonNode flagDefault, @JsonSetter(nulls = Nulls.AS_EMPTY) List<String> choices) {
        Field {
            choices = choices == null ? List.of() : List.copyOf(choices);
        }
    }

    ConfigContract {
        fields = List.copyOf(fields);
    }

    /** The contract packed into this module's jar. */
    static ConfigContract get() {
        return LOADED;
    }

    Field field(String name) {
        for (Field f : fields) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException("No config field '" + name + "' in " + RESOURCE);
    }

    /** Every field's default, in field order: the configuration of {@code RouterArgs()}. */
    ObjectNode defaults() {
        ObjectNode defaults = JsonNodeFactory.instance.objectNode();
        for (Field f : fields) {
            defaults.set(f.name(), f.defaultValue().deepCopy());
        }
        return defaults;
    }

    private static ConfigContract load() {
        ObjectMapper mapper = JsonMapper.builder()
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .build();
        try (InputStream in = ConfigContract.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing from the classpath: it is generated from the "
                        + "Python RouterArgs when router-core is built with Maven (python3 on PATH)");
            }
            return mapper.readValue(in, ConfigContract.class);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + RESOURCE, e);
        }
    }
}
