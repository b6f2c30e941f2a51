package org.vllmrouter.server.http;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import org.vllmrouter.core.session.BodySource;

/**
 * Checks that a body is one well-formed JSON document (an object where the route needs one) in a single streaming
 * pass, without building a tree; the bytes forwarded are still the client's own.
 */
public final class JsonBodyCheck {
    private JsonBodyCheck() {}

    /** Null when the body is acceptable, else the 400 message. */
    public static String problem(ByteBuf body, boolean requireObject) {
        return problem(AggregatedBody.source(body), requireObject);
    }

    public static String problem(BodySource body, boolean requireObject) {
        try (JsonParser parser = body.open(Json.FACTORY)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                return "Invalid JSON body: empty document";
            }
            if (requireObject && first != JsonToken.START_OBJECT) {
                return "Invalid JSON body: expected a JSON object, got " + describe(first);
            }
            parser.skipChildren();
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
