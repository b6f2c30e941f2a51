package org.vllmrouter.server.route;

import com.github.benmanes.caffeine.cache.AsyncCache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.vllmrouter.server.worker.ControlClient;

/**
 * Inbound authorization. {@code admin_api_key} (ours) guards the admin routes with a constant-time comparison;
 * {@code api_key_validation_urls} (upstream) validates any other request's bearer token by asking each URL in turn.
 * Verdicts are cached, as upstream, but not for the life of the process: every distinct token a client sends would
 * stay in memory, and a revoked key would stay valid. The cache holds at most {@link #MAX_VERDICTS} tokens (Caffeine
 * keeps the frequently used ones) for at most {@link #VERDICT_TTL} each; concurrent requests with the same new token
 * share one validation.
 */
final class Auth {
    static final String INVALID_API_KEY = "You must provide a valid API key. Obtain one from http://helmholtz.cloud";
    static final long MAX_VERDICTS = 10_000;
    static final Duration VERDICT_TTL = Duration.ofMinutes(5);
    private static final Duration VALIDATION_TIMEOUT = Duration.ofSeconds(10);

    private final byte[] adminKey;
    private final List<String> validationUrls;
    private final ControlClient client;
    private final AsyncCache<String, Boolean> verdicts;

    Auth(String adminApiKey, List<String> validationUrls, ControlClient client) {
        this(adminApiKey, validationUrls, client, MAX_VERDICTS, VERDICT_TTL, Ticker.systemTicker());
    }

    Auth(String adminApiKey, List<String> validationUrls, ControlClient client, long maxVerdicts, Duration verdictTtl,
         Ticker ticker) {
        this.adminKey = adminApiKey == null || adminApiKey.isEmpty() ? null : adminApiKey.getBytes(StandardCharsets.UTF_8);
        this.validationUrls = validationUrls == null ? List.of() : List.copyOf(validationUrls);
        this.client = client;
        this.verdicts = Caffeine.newBuilder()
                .maximumSize(maxVerdicts)
                .expireAfterWrite(verdictTtl)
                .ticker(ticker)
                .recordStats()
                .buildAsync();
    }

    /** Verdicts the cache dropped, to stay within its size or at the end of their TTL. */
    long evictedVerdicts() {
        return verdicts.synchronous().stats().evictionCount();
    }

    /** Verdicts held now (pending evictions done first). */
    long cachedVerdicts() {
        verdicts.synchronous().cleanUp();
        return verdicts.synchronous().estimatedSize();
    }

    boolean adminOpen() {
        return adminKey == null;
    }

    boolean validationEnabled() {
        return !validationUrls.isEmpty();
    }

    boolean isAdmin(HttpHeaders headers) {
        if (adminKey == null) {
            return true;
        }
        String token = bearer(headers);
        return token != null && MessageDigest.isEqual(adminKey, token.getBytes(StandardCharsets.UTF_8));
    }

    /** Completes with whether the request's bearer token is accepted by a validation URL. */
    CompletableFuture<Boolean> validate(EventLoop loop, HttpHeaders headers) {
        String token = bearer(headers);
        if (token == null || token.isEmpty()) {
            return CompletableFuture.completedFuture(false);
        }
        return verdicts.get(token, (key, executor) -> askFrom(loop, key, 0));
    }

    private CompletableFuture<Boolean> askFrom(EventLoop loop, String token, int index) {
        if (index >= validationUrls.size()) {
            return CompletableFuture.completedFuture(false);
        }
        java.net.URI uri = java.net.URI.create(validationUrls.get(index));
        String base = uri.getScheme() + "://" + uri.getRawAuthority();
        String target = (uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath())
                + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
        HttpHeaders headers = new DefaultHttpHeaders().set(HttpHeaderNames.AUTHORIZATION, "Bearer " + token);
        return client.send(loop, HttpMethod.GET, base, target, headers, null, VALIDATION_TIMEOUT)
                .handle((reply, error) -> reply != null && reply.status() == 200)
                .thenCompose(ok -> ok ? CompletableFuture.completedFuture(true) : askFrom(loop, token, index + 1));
    }

    private static String bearer(HttpHeaders headers) {
        String value = headers.get(HttpHeaderNames.AUTHORIZATION);
        if (value == null || !value.startsWith("Bearer ")) {
            return null;
        }
        return value.substring("Bearer ".length()).trim();
    }
}
