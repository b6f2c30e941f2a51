package org.vllmrouter.core.config;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON values as plain Java objects, read and written with Jackson's streaming parser and generator: an object is a
 * {@code Map<String, Object>} in document order, an array a {@code List<Object>}, a whole number a {@code Long} (a
 * {@code BigInteger} past its range), any other number a {@code Double}, and then {@code String}, {@code Boolean} and
 * {@code null}.
 *
 * <p>The configuration is the only JSON the engine reads as a whole document at start-up; reading it through
 * Jackson's data binding loaded some 600 classes (binding, introspection, serializers, method handles) for one
 * object, and their metadata stayed resident in every router process.
 */
final class JsonValues {
    private static final JsonFactory FACTORY = new JsonFactory();

    private JsonValues() {}

    /**
     * The one value {@code json} holds; anything after it but whitespace is an error. Empty input reads as
     * {@code null}.
     */
    static Object read(String json) throws IOException {
        try (JsonParser parser = FACTORY.createParser(json)) {
            if (parser.nextToken() == null) {
                return null;
            }
            Object value = value(parser);
            JsonToken trailing = parser.nextToken();
            if (trailing != null) {
                throw new JsonParseException(parser, "Trailing token (of type " + trailing + ") found after value");
            }
            return value;
        }
    }

    /** {@code value} as compact JSON text; a map's entries in its iteration order. */
    static String write(Object value) {
        StringWriter out = new StringWriter();
        try (JsonGenerator generator = FACTORY.createGenerator(out)) {
            write(generator, value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    static void write(JsonGenerator generator, Object value) throws IOException {
        if (value == null) {
            generator.writeNull();
        } else if (value instanceof String s) {
            generator.writeString(s);
        } else if (value instanceof Boolean b) {
            generator.writeBoolean(b);
        } else if (value instanceof Integer i) {
            generator.writeNumber(i);
        } else if (value instanceof Long l) {
            generator.writeNumber(l);
        } else if (value instanceof BigInteger big) {
            generator.writeNumber(big);
        } else if (value instanceof Double d) {
            generator.writeNumber(d);
        } else if (value instanceof List<?> list) {
            generator.writeStartArray();
            for (Object item : list) {
                write(generator, item);
            }
            generator.writeEndArray();
        } else if (value instanceof Map<?, ?> map) {
            generator.writeStartObject();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                generator.writeFieldName((String) e.getKey());
                write(generator, e.getValue());
            }
            generator.writeEndObject();
        } else {
            throw new IllegalArgumentException("Not a JSON value: " + value.getClass().getName());
        }
    }

    /** The value starting at the parser's current token. */
    private static Object value(JsonParser parser) throws IOException {
        return switch (parser.currentToken()) {
            case START_OBJECT -> {
                Map<String, Object> object = new LinkedHashMap<>();
                while (parser.nextToken() == JsonToken.FIELD_NAME) {
                    String name = parser.currentName();
                    parser.nextToken();
                    object.put(name, value(parser));
                }
                yield object;
            }
            case START_ARRAY -> {
                List<Object> array = new ArrayList<>();
                while (parser.nextToken() != JsonToken.END_ARRAY) {
                    array.add(value(parser));
                }
                yield array;
            }
            case VALUE_STRING -> parser.getText();
            case VALUE_NUMBER_INT -> parser.getNumberType() == JsonParser.NumberType.BIG_INTEGER
                    ? parser.getBigIntegerValue() : (Object) parser.getLongValue();
            case VALUE_NUMBER_FLOAT -> parser.getDoubleValue();
            case VALUE_TRUE -> Boolean.TRUE;
            case VALUE_FALSE -> Boolean.FALSE;
            case VALUE_NULL -> null;
            default -> throw new JsonParseException(parser, "Unexpected token " + parser.currentToken());
        };
    }
}
