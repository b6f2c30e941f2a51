package org.vllmrouter.core.session;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * One streaming pass over a request body: checks that it is one well-formed JSON document (an object where the
 * route needs one) and, in the same pass, hands each top-level field to a reader. A request is parsed once, not once
 * to check it and again to find its routing fields; no tree is built and the bytes forwarded stay the client's own.
 */
public final class JsonBodyScan {
    /** Reads the top-level fields a caller cares about; whatever it leaves of a value is skipped (and checked). */
    @FunctionalInterface
    public interface FieldReader {
        /** {@code p} stands on {@code value}, the first token of field {@code name}'s value. */
        void field(String name, JsonToken value, JsonParser p) throws IOException;
    }

    static final JsonFactory FACTORY = new FastSkipJsonFactory();

    private JsonBodyScan() {}

    /** Null when {@code body} is acceptable, else the 400 message; {@code fields} (may be null) sees each field. */
    public static String check(BodySource body, boolean requireObject, FieldReader fields) {
        try (JsonParser parser = body.open(FACTORY)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                return "Invalid JSON body: empty document";
            }
            if (requireObject && first != JsonToken.START_OBJECT) {
                return "Invalid JSON body: expected a JSON object, got " + describe(first);
            }
            if (first == JsonToken.START_OBJECT && fields != null) {
                // Inside an object the parser yields a field name or the object's end, or throws (end of input too).
                while (parser.nextToken() == JsonToken.FIELD_NAME) {
                    String name = parser.currentName();
                    fields.field(name, parser.nextToken(), parser);
                    // No-op for scalars and for a value the reader read to its end.
                    parser.skipChildren();
                }
            } else {
                parser.skipChildren();
            }
            if (parser.nextToken() != null) {
                return "Invalid JSON body: unexpected content after the JSON document";
            }
            return null;
        } catch (JsonProcessingException e) {
            return "Invalid JSON body: " + e.getOriginalMessage();
        } catch (IOException e) {
            return "Invalid JSON body: " + e.getMessage();
        }
    }

    private static String describe(JsonToken token) {
        return switch (token) {
            case START_ARRAY -> "an array";
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "a number";
            case VALUE_TRUE, VALUE_FALSE -> "a boolean";
            case VALUE_NULL -> "null";
            default -> token.asString();
        };
    }
}
