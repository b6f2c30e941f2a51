package org.vllmrouter.core.session;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.vllmrouter.core.config.RouterConfig;

/**
 * Finds a request's session id (upstream's {@code extract_session_id}, new version) and its top-level
 * {@code model} in one streaming pass.
 *
 * <p>Where an id may come from is configured: headers first, in priority order, empty values skipped; then
 * body fields, each a top-level name or {@code parent.child} one level down, in priority order. Upstream's
 * lists ({@link #UPSTREAM}) are the default. Only non-empty strings count (escapes decoded); anything nested
 * elsewhere, null or non-string is ignored. Values the answer does not depend on are skipped without being
 * decoded, and the scan stops once nothing later could change the answer. A body that is not valid JSON
 * contributes nothing.
 */
public final class SessionIdExtractor {
    /**
     * Header names that carry a session id upstream, highest priority first: the default of
     * {@code session_id_headers}, which the config contract carries from the Python {@code RouterArgs}.
     */
    public static final List<String> SESSION_HEADERS = RouterConfig.defaults().sessionIdHeaders();
    /** Body fields that carry a session id upstream, highest priority first: the default of the body fields flag. */
    public static final List<String> SESSION_BODY_FIELDS = RouterConfig.defaults().sessionIdBodyFields();
    /** Longest accepted session id, in UTF-8 bytes. */
    public static final int MAX_SESSION_ID_BYTES = 1024;
    /** Upstream's sources: {@link #SESSION_HEADERS}, then {@link #SESSION_BODY_FIELDS}. */
    public static final SessionIdExtractor UPSTREAM = new SessionIdExtractor(SESSION_HEADERS, SESSION_BODY_FIELDS);

    private final String[] headers;
    /** The body fields in priority order, as given ({@code parent.child} for a nested one). */
    private final String[] fieldPaths;
    /** Top-level name -> its priority (index in {@link #fieldPaths}). */
    private final Map<String, Integer> topLevel = new HashMap<>();
    /** Parent name -> (child name -> its priority). */
    private final Map<String, Map<String, Integer>> nested = new HashMap<>();

    /**
     * Looks for a session id in {@code headers} (any case), then in {@code bodyFields} (a top-level name or
     * {@code parent.child}); either list may be empty.
     *
     * @throws IllegalArgumentException for an empty header name or a field path that is not one or two
     *         non-empty names
     */
    public SessionIdExtractor(List<String> headers, List<String> bodyFields) {
        this.headers = new String[headers.size()];
        for (int i = 0; i < headers.size(); i++) {
            String name = headers.get(i);
            if (name == null || name.isEmpty()) {
                throw new IllegalArgumentException("empty session id header name");
            }
            this.headers[i] = name.toLowerCase(Locale.ROOT);
        }
        this.fieldPaths = bodyFields.toArray(String[]::new);
        for (int i = 0; i < fieldPaths.length; i++) {
            String[] parts = fieldPaths[i] == null ? new String[0] : fieldPaths[i].split("\\.", -1);
            if (parts.length == 0 || parts.length > 2 || Arrays.asList(parts).contains("")) {
                throw new IllegalArgumentException("session id body field '" + fieldPaths[i]
                        + "' is not a top-level name or parent.child");
            }
            if (parts.length == 1) {
                topLevel.putIfAbsent(parts[0], i);
            } else {
                nested.computeIfAbsent(parts[0], p -> new HashMap<>()).putIfAbsent(parts[1], i);
            }
        }
    }

    public Extraction extract(HeaderLookup lookup, BodySource body) {
        HeaderId header = idHeader(lookup);
        return choose(header, scan(body, header == null));
    }

    /** As {@link #extract} for a request with no body to read: the headers alone, no parser opened. */
    public Extraction extractFromHeaders(HeaderLookup lookup) {
        return choose(idHeader(lookup), new BodyFields(fieldPaths.length));
    }

    /**
     * As {@link #extract}, in the same single pass checking that {@code body} is one well-formed JSON document (an
     * object when {@code requireObject}, see {@link JsonBodyScan}); a body that is not gets its problem as the
     * invalid reason, and nothing else is taken from it.
     */
    public Extraction extractChecked(HeaderLookup lookup, BodySource body, boolean requireObject) {
        HeaderId header = idHeader(lookup);
        boolean wantId = header == null;
        BodyFields fields = new BodyFields(fieldPaths.length);
        String problem = JsonBodyScan.check(body, requireObject, (name, value, p) -> collect(name, value, p, wantId, fields));
        if (problem != null) {
            return new Extraction(null, null, problem);
        }
        return choose(header, fields);
    }

    private record HeaderId(String name, String value) {
    }

    /** The first configured header with a non-empty value, or null. */
    private HeaderId idHeader(HeaderLookup lookup) {
        for (String name : headers) {
            String value = lookup.get(name);
            if (value != null && !value.isEmpty()) {
                return new HeaderId(name, value);
            }
        }
        return null;
    }

    private Extraction choose(HeaderId header, BodyFields fields) {
        String id = header == null ? null : header.value();
        int best = fields.best();
        if (id == null && best >= 0) {
            id = fields.ids[best];
        }
        if (id != null) {
            String problem = problemWith(id);
            if (problem != null) {
                String source = header != null ? "header '" + header.name() + "'" : "body field '" + fieldPaths[best] + "'";
                return new Extraction(null, fields.model, "Invalid session id in " + source + ": " + problem);
            }
        }
        return new Extraction(id, fields.model, null);
    }

    /**
     * The top-level identity fields of a JSON body (non-empty strings only; nulls when absent), for
     * policies that build their own keys from them (consistent_hash, rendezvous_hash).
     */
    public record BodyIds(String model, String sessionParamsId, String user, String sessionId, String userId) {
    }

    public static BodyIds bodyIds(BodySource body) {
        BodyFields f = UPSTREAM.scan(body, true);
        return new BodyIds(f.model, f.ids[0], f.ids[1], f.ids[2], f.ids[3]);
    }

    /** Why {@code id} cannot be a session id (too long, control characters), or null when it can. */
    public static String problemWith(String id) {
        long utf8Bytes = 0;
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (Character.isISOControl(c)) {
                return "contains control characters";
            }
            if (c < 0x80) {
                utf8Bytes += 1;
            } else if (c < 0x800) {
                utf8Bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < id.length() && Character.isLowSurrogate(id.charAt(i + 1))) {
                utf8Bytes += 4;
                i++;
            } else {
                utf8Bytes += 3;
            }
        }
        return utf8Bytes > MAX_SESSION_ID_BYTES ? "longer than " + MAX_SESSION_ID_BYTES + " bytes" : null;
    }

    private BodyFields scan(BodySource body, boolean wantId) {
        BodyFields found = new BodyFields(fieldPaths.length);
        try (JsonParser p = body.open(JsonBodyScan.FACTORY)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return found;
            }
            JsonToken token;
            while ((token = p.nextToken()) == JsonToken.FIELD_NAME) {
                collect(p.currentName(), p.nextToken(), p, wantId, found);
                // No-op for scalars and for an object already read to its end.
                p.skipChildren();
                if (found.model != null && (!wantId || found.ids.length == 0 || found.ids[0] != null)) {
                    return found;
                }
            }
            if (token != JsonToken.END_OBJECT) {
                return new BodyFields(fieldPaths.length);
            }
            return found;
        } catch (IOException | RuntimeException malformed) {
            return new BodyFields(fieldPaths.length);
        }
    }

    /** Takes what field {@code name} (its value starting at {@code value}) gives: the model, and ids when wanted. */
    private void collect(String name, JsonToken value, JsonParser p, boolean wantId, BodyFields found) throws IOException {
        if (name.equals("model")) {
            found.model = firstString(found.model, p, value);
        }
        if (wantId) {
            Integer priority = topLevel.get(name);
            if (priority != null) {
                found.ids[priority] = firstString(found.ids[priority], p, value);
            }
            Map<String, Integer> children = nested.get(name);
            if (children != null && value == JsonToken.START_OBJECT) {
                readChildren(p, children, found);
            }
        }
    }

    private static void readChildren(JsonParser p, Map<String, Integer> children, BodyFields found) throws IOException {
        JsonToken token;
        while ((token = p.nextToken()) == JsonToken.FIELD_NAME) {
            Integer priority = children.get(p.currentName());
            JsonToken value = p.nextToken();
            if (priority != null) {
                found.ids[priority] = firstString(found.ids[priority], p, value);
            }
            p.skipChildren();
        }
        if (token != JsonToken.END_OBJECT) {
            throw new IOException("unterminated object");
        }
    }

    /** Keeps the first non-empty string seen for a field; other values do not count. */
    private static String firstString(String current, JsonParser p, JsonToken value) throws IOException {
        if (current != null || value != JsonToken.VALUE_STRING) {
            return current;
        }
        String s = p.getText();
        return s.isEmpty() ? null : s;
    }

    private static final class BodyFields {
        String model;
        /** By priority: the first non-empty string of each configured field, null when none. */
        final String[] ids;

        BodyFields(int fieldCount) {
            ids = new String[fieldCount];
        }

        /** Priority of the best id found, -1 when none. */
        int best() {
            for (int i = 0; i < ids.length; i++) {
                if (ids[i] != null) {
                    return i;
                }
            }
            return -1;
        }
    }
}
