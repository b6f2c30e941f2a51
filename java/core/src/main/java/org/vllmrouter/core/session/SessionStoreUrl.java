package org.vllmrouter.core.session;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;

/**
 * The {@code session_store} setting: {@value #MEMORY}, or a Redis URL {@code redis://[user:pass@]host[:port][/db]}
 * ({@code rediss://} for TLS). Checked here, without a Redis client, so a malformed URL is a configuration error
 * before anything starts.
 */
public final class SessionStoreUrl {
    public static final String MEMORY = "memory";

    private SessionStoreUrl() {
    }

    /** Why {@code spec} is not a usable setting, or null when it is. */
    public static String problem(String spec) {
        if (MEMORY.equals(spec)) {
            return null;
        }
        String scheme = scheme(spec);
        if (!"redis".equals(scheme) && !"rediss".equals(scheme)) {
            return "Must be 'memory' or a redis:// or rediss:// URL";
        }
        URI uri;
        try {
            uri = new URI(spec);
        } catch (URISyntaxException e) {
            return "Invalid URL format: " + e.getReason();
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            return "URL must have a host, as in redis://host:6379";
        }
        if (uri.getPort() == 0 || uri.getPort() > 65535) {
            return "Port must be between 1 and 65535";
        }
        String path = uri.getRawPath();
        if (path != null && !path.isEmpty() && !path.equals("/") && !path.substring(1).matches("[0-9]{1,9}")) {
            return "The path must be empty or a database number, as in redis://host:6379/0";
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
            return "URL must not have a query or a fragment";
        }
        return null;
    }

    /** The scheme of a store URL in lower case ({@code redis}, {@code rediss}), or null when there is none. */
    public static String scheme(String spec) {
        int end = spec.indexOf("://");
        return end <= 0 ? null : spec.substring(0, end).toLowerCase(Locale.ROOT);
    }
}
