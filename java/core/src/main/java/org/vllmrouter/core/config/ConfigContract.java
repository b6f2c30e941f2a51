package org.vllmrouter.core.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The configuration fields as the Python {@code RouterArgs} dataclass defines them, generated from it when
 * this module is built ({@code python3 -m vllm_router.config_contract}, see docs/architecture.md, 'The config
 * contract'). The engine takes the fields' defaults and the policy names from here instead of repeating them.
 *
 * @param fields every field in dataclass order, which is the canonical JSON order
 * @param defaultsJson the exact JSON text Python sends for {@code RouterArgs()}
 */
record ConfigContract(List<Field> fields, String defaultsJson) {
    static final String RESOURCE = "router-config-contract.json";

    private static final ConfigContract LOADED = load();

    /** The JSON types a field's Python annotation maps to. */
    enum JsonType {
        STRING, INTEGER, NUMBER, BOOLEAN, ARRAY, OBJECT;

        static JsonType of(String name) {
            return valueOf(name.toUpperCase(Locale.ROOT));
        }
    }

    /**
     * One field.
     *
     * @param nullable whether the annotation admits None
     * @param defaultValue the dataclass default, a JSON value as {@link JsonValues} holds one
     * @param flagDefault the command line's default where it differs from {@code defaultValue}, else null
     * @param choices the values the field's flag accepts when it is restricted to a set, else empty
     * @param range the bounds a value must lie within, else null
     * @param refusal the message a true value is refused with, else null
     */
    record Field(String name, JsonType type, boolean nullable, Object defaultValue, Object flagDefault,
                 List<String> choices, Range range, String refusal) {
        Field {
            choices = choices == null ? List.of() : List.copyOf(choices);
        }
    }

    /** Inclusive bounds of a whole-number field, and the message for a value outside them. */
    record Range(long min, long max, String message) {
        boolean contains(long value) {
            return value >= min && value <= max;
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

    private static ConfigContract load() {
        Object contract;
        try (InputStream in = ConfigContract.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing from the classpath: it is generated from the "
                        + "Python RouterArgs when router-core is built with Maven (python3 on PATH)");
            }
            contract = JsonValues.read(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + RESOURCE, e);
        }
        try {
            Map<?, ?> top = (Map<?, ?>) contract;
            List<Field> fields = new ArrayList<>();
            for (Object item : (List<?>) top.get("fields")) {
                Map<?, ?> f = (Map<?, ?>) item;
                List<String> choices = new ArrayList<>();
                if (f.get("choices") != null) {
                    for (Object choice : (List<?>) f.get("choices")) {
                        choices.add((String) choice);
                    }
                }
                Map<?, ?> range = (Map<?, ?>) f.get("range");
                fields.add(new Field((String) f.get("name"), JsonType.of((String) f.get("type")),
                        (Boolean) f.get("nullable"), f.get("default"), f.get("flag_default"), choices,
                        range == null ? null : new Range((Long) range.get("min"), (Long) range.get("max"),
                                (String) range.get("message")),
                        (String) f.get("refusal")));
            }
            return new ConfigContract(fields, (String) top.get("defaults_json"));
        } catch (ClassCastException | NullPointerException | IllegalArgumentException e) {
            throw new IllegalStateException(RESOURCE + " does not have the contract's shape: " + e.getMessage(), e);
        }
    }
}
