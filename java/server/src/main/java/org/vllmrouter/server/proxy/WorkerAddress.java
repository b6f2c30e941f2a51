package org.vllmrouter.server.proxy;

import java.net.InetSocketAddress;
import java.net.URI;
import java.util.concurrent.ConcurrentHashMap;
import org.vllmrouter.core.config.UrlRedaction;

/**
 * Host and port of a worker base URL such as {@code http://10.0.0.5:8000}, parsed once per URL; {@code tls} when the
 * scheme is {@code https}.
 */
public record WorkerAddress(String host, int port, String hostHeader, boolean tls) {
    private static final ConcurrentHashMap<String, WorkerAddress> CACHE = new ConcurrentHashMap<>();

    public static WorkerAddress of(String baseUrl) {
        return CACHE.computeIfAbsent(baseUrl, WorkerAddress::parse);
    }

    private static WorkerAddress parse(String baseUrl) {
        URI uri = URI.create(baseUrl);
        String host = uri.getHost();
        if (host == null) {
            throw new IllegalArgumentException("URL must have a valid host: " + UrlRedaction.redact(baseUrl));
        }
        boolean tls = "https".equalsIgnoreCase(uri.getScheme());
        int port = uri.getPort() > 0 ? uri.getPort() : tls ? 443 : 80;
        String bareHost = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
        return new WorkerAddress(bareHost, port, host + ":" + port, tls);
    }

    public InetSocketAddress socketAddress() {
        return InetSocketAddress.createUnresolved(host, port);
    }
}
