package org.vllmrouter.core.session;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.List;

/**
 * Finds a request's session id (upstream's {@code extract_session_id}, new version) and its top-level
 * {@code model} in one streaming pass.
 *
 * <p>Headers first, in priority order, empty values skipped. Then top-level body fields:
 * {@code session_params.session_id} > {@code user} > {@code session_id} > {@code user_id}; only non-empty
 * strings count (escapes decoded), anything nested elsewhere, null or non-string is ignored. Values the
 * answer does not depend on are skipped without being decoded, and the scan stops once nothing
 * later could change the answer. A body that is not valid JSON contributes nothing.
 */
public final class SessionIdExtractor {
    /** Header names that carry a session id, highest priority first. */
    public static final List<String> SESSION_HEADERS = List.of(
            "x-session-id", "x-user-id", "x-tenant-id", "x-correlation-id", "x-request-id", "x-trace-id");
    /** Longest accepted session id, in UTF-8 bytes. */
    public static final int MAX_SESSION_ID_BYTES = 1024;

    private static final JsonFactory FACTORY = new JsonFactory();

    private SessionIdExtractor() {
    }

    public static Extraction extract(HeaderLookup headers, BodySource body) {
        String id = null;
        String header = null;
        for (String name : SESSION_HEADERS) {
            String value = headers.get(name);
            if (value != null && !value.isEmpty()) {
                id = value;
                header = name;
                break;
            }
        }
        BodyFields fields = scan(body, id == null);
        if (id == null) {
            id = fields.bestId();
        }
        if (id != null) {
            String problem = problemWith(id);
            if (problem != null) {
                String source = header != null ? "header '" + header + "'" : fields.bestSource();
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
        BodyFields f = scan(body, true);
        return new BodyIds(f.model, f.sessionParamsId, f.user, f.sessionId, f.userId);
    }

    /** Why {@code id} cannot be a session id, or null when it can. */
    static String problemWith(String id) {
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

    private static BodyFields scan(BodySource body, boolean wantId) {
        BodyFields found = new BodyFields();
        try (JsonParser p = body.open(FACTORY)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return found;
            }
            JsonToken token;
            while ((token = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                switch (name) {
                    case "model" -> found.model = firstString(found.model, p, value);
                    case "session_params" -> {
                        if (wantId && value == JsonToken.START_OBJECT) {
                            readSessionParams(p, found);
                        }
                    }
                    case "user" -> found.user = wantId ? firstString(found.user, p, value) : null;
                    case "session_id" -> found.sessionId = wantId ? firstString(found.sessionId, p, value) : null;
                    case "user_id" -> found.userId = wantId ? firstString(found.userId, p, value) : null;
                    default -> {
                        // Irrelevant field: skipped below without decoding it.
                    }
                }
                // No-op for scalars and for an object already read to its end.
                p.skipChildren();
                if (found.model != null && (!wantId || found.sessionParamsId != null)) {
                    return found;
                }
            }
            if (token != JsonToken.END_OBJECT) {
                return new BodyFields();
            }
            return found;
        } catch (IOException | RuntimeException malformed) {
            return new BodyFields();
        }
    }

    private static void readSessionParams(JsonParser p, BodyFields found) throws IOException {
        JsonToken token;
        while ((token = p.nextToken()) == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if (name.equals("session_id")) {
                found.sessionParamsId = firstString(found.sessionParamsId, p, value);
            }
            p.skipChildren();
        }
        if (token != JsonToken.END_OBJECT) {
            throw new IOException("unterminated session_params");
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
        String sessionParamsId;
        String user;
        String sessionId;
        String userId;

        String bestId() {
            return sessionParamsId != null ? sessionParamsId
                    : user != null ? user
                    : sessionId != null ? sessionId
                    : userId;
        }

        String bestSource() {
            return sessionParamsId != null ? "body field 'session_params.session_id'"
                    : user != null ? "body field 'user'"
                    : sessionId != null ? "body field 'session_id'"
                    : "body field 'user_id'";
        }
    }
}
