package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * One request as the worker received it, for tests that check what a router forwarded.
 *
 * @param method  HTTP method
 * @param uri     request target as sent (path and query)
 * @param path    {@code uri} without the query
 * @param headers every header line in arrival order (names as sent)
 * @param body    the body bytes exactly as received
 * @param receivedAtMillis wall-clock arrival time
 */
public record CapturedRequest(String method, String uri, String path,
                              List<Map.Entry<String, String>> headers, byte[] body,
                              long receivedAtMillis) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** The first value of a header (case-insensitive name), or null. */
    public String header(String name) {
        for (Map.Entry<String, String> h : headers) {
            if (h.getKey().equalsIgnoreCase(name)) {
                return h.getValue();
            }
        }
        return null;
    }

    public String bodyText() {
        return new String(body, StandardCharsets.UTF_8);
    }

    /** The body parsed as JSON (e.g. to read the {@code kv_transfer_params} a decode worker got). */
    public JsonNode json() {
        try {
            return JSON.readTree(body);
        } catch (IOException e) {
            throw new UncheckedIOException("captured body is not JSON: " + bodyText(), e);
        }
    }
}
