package org.vllmrouter.mock;

import java.util.Set;

/** Which paths the mock serves, grouped by how faults and counters treat them. */
final class Routes {

    /** POST routes that do model work: counted, faulted, API-key protected. */
    static final Set<String> INFERENCE = Set.of(
            "/v1/completions", "/v1/chat/completions", "/generate", "/inference/v1/generate",
            "/v1/embeddings", "/v1/rerank", "/rerank", "/v1/responses", "/tokenize", "/detokenize",
            "/v1/chat/completions/render", "/v1/completions/render");

    /** GET routes that describe the worker. */
    static final Set<String> INFO = Set.of(
            "/health", "/health_generate", "/v1/models", "/get_model_info", "/get_server_info",
            "/get_load", "/load", "/kv_event_sources", "/metrics");

    /** POST routes that act on the worker's cache. */
    static final Set<String> CACHE = Set.of("/flush_cache", "/reset_prefix_cache");

    /** Test plumbing: GET lists, DELETE clears; never captured, never faulted. */
    static final String CAPTURED = "/captured_requests";

    private Routes() {}

    static String pathOf(String uri) {
        int q = uri.indexOf('?');
        return q < 0 ? uri : uri.substring(0, q);
    }

    static boolean isHealth(String path) {
        return path.equals("/health") || path.equals("/health_generate");
    }
}
