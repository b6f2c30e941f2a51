package org.vllmrouter.core.policy;

import java.nio.charset.StandardCharsets;
import org.vllmrouter.core.hash.FbiHash;
import org.vllmrouter.core.session.BodySource;
import org.vllmrouter.core.session.SessionIdExtractor;
import org.vllmrouter.core.session.SessionIdExtractor.BodyIds;

/**
 * Hash keys of the hashing policies (upstream {@code extract_hash_key} and rendezvous_hash's own
 * extractor): a session header, else an identity field of the body, else the body itself. Body fields
 * are read as JSON (top level, strings only) rather than by upstream's textual search.
 */
final class HashKeys {
    private static final int LONG_TEXT_BYTES = 100;

    private HashKeys() {
    }

    /** consistent_hash: {@code session_params.session_id}, {@code user}, {@code session_id}, {@code user_id}. */
    static String consistentHashKey(RoutingRequest request) {
        String header = headerKey(request);
        if (header != null) {
            return header;
        }
        String text = request.text();
        BodyIds ids = SessionIdExtractor.bodyIds(BodySource.of(text));
        if (ids.sessionParamsId() != null) {
            return "session:" + ids.sessionParamsId();
        }
        if (ids.user() != null) {
            return "user:" + ids.user();
        }
        if (ids.sessionId() != null) {
            return "session:" + ids.sessionId();
        }
        if (ids.userId() != null) {
            return "user:" + ids.userId();
        }
        return textKey(text);
    }

    /** rendezvous_hash: {@code session_id}, {@code user}, {@code user_id}. */
    static String rendezvousKey(RoutingRequest request) {
        String header = headerKey(request);
        if (header != null) {
            return header;
        }
        String text = request.text();
        BodyIds ids = SessionIdExtractor.bodyIds(BodySource.of(text));
        if (ids.sessionId() != null) {
            return "session:" + ids.sessionId();
        }
        if (ids.user() != null) {
            return "user:" + ids.user();
        }
        if (ids.userId() != null) {
            return "user:" + ids.userId();
        }
        return textKey(text);
    }

    private static String headerKey(RoutingRequest request) {
        for (String name : SessionIdExtractor.SESSION_HEADERS) {
            String value = request.headers().get(name);
            if (value != null && !value.isEmpty()) {
                return "header:" + name + ":" + value;
            }
        }
        return null;
    }

    static String textKey(String text) {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        if (utf8.length > LONG_TEXT_BYTES) {
            return "request_hash:" + String.format("%016x", FbiHash.hash(utf8));
        }
        return "request:" + text;
    }
}
