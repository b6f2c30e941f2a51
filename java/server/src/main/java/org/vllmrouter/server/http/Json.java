package org.vllmrouter.server.http;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;

/** Writes small JSON documents for the router's own responses; proxied bodies never pass through here. */
public final class Json {
    public static final JsonFactory FACTORY = new JsonFactory();

    @FunctionalInterface
    public interface Body {
        void write(JsonGenerator g) throws IOException;
    }

    private Json() {}

    public static String object(Body body) {
        StringWriter out = new StringWriter();
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            g.writeStartObject();
            body.write(g);
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    /** The OpenAI-style error envelope clients such as SkyRL read ({@code error.message}). */
    static String error(String message, String type, int code) {
        return object(g -> {
            g.writeObjectFieldStart("error");
            g.writeStringField("message", message);
            g.writeStringField("type", type);
            g.writeNumberField("code", code);
            g.writeEndObject();
        });
    }
}
