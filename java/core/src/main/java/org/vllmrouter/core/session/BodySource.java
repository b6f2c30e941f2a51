package org.vllmrouter.core.session;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** A request body that can be read with a streaming JSON parser, without copying it first. */
@FunctionalInterface
public interface BodySource {
    BodySource EMPTY = f -> f.createParser(new byte[0]);

    JsonParser open(JsonFactory factory) throws IOException;

    static BodySource of(byte[] bytes, int offset, int length) {
        return f -> f.createParser(bytes, offset, length);
    }

    static BodySource of(byte[] bytes) {
        return of(bytes, 0, bytes.length);
    }

    static BodySource of(String json) {
        return of(json.getBytes(StandardCharsets.UTF_8));
    }
}
