package org.vllmrouter.server.route;

import com.fasterxml.jackson.core.JsonGenerator;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import org.vllmrouter.core.settings.DashboardSettings;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.server.http.Json;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.http.Responses;
import org.vllmrouter.server.metrics.ActivityWindow;

/**
 * The status page: {@code GET /dashboard} serves one self-contained HTML page (a resource of this jar, no external
 * scripts, styles or fonts) that polls {@code GET /dashboard/state} once a second. The state is an admin route, so
 * it needs the admin API key when one is set; the page itself holds no data and is open to anyone. The state names
 * workers, policies and counters, never a key.
 */
final class DashboardRoutes {
    static final String PAGE = "/dashboard";
    static final String STATE = "/dashboard/state";
    static final String PREFIX = "/dashboard/";
    private static final String RESOURCE = "dashboard.html";
    private static final String NOSNIFF = "nosniff";

    private final DashboardSettings config;
    private final WorkerRegistry workers;
    private final PolicyRegistry policies;
    private final ActivityWindow activity;
    private final Supplier<Map<String, Double>> cachedTokenRates;
    private final long startedNanos = System.nanoTime();
    private final byte[] page;
    private final String contentSecurityPolicy;

    /** {@code cachedTokenRates}: per worker label, the share of prompt tokens its answers reported cached. */
    DashboardRoutes(DashboardSettings config, WorkerRegistry workers, PolicyRegistry policies,
                    ActivityWindow activity, Supplier<Map<String, Double>> cachedTokenRates) {
        this.config = config;
        this.workers = workers;
        this.policies = policies;
        this.activity = activity;
        this.cachedTokenRates = cachedTokenRates;
        String html = readResource();
        this.page = html.getBytes(StandardCharsets.UTF_8);
        // Only the page's own inline script and style may run: injected markup could neither execute nor restyle.
        this.contentSecurityPolicy = "default-src 'none'; script-src " + inlineHash(html, "script")
                + "; style-src " + inlineHash(html, "style")
                + "; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
    }

    void page(Reply reply, FullHttpRequest request, RequestPath path) {
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                Unpooled.wrappedBuffer(page));
        HttpHeaders headers = response.headers();
        headers.set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.TEXT_HTML + "; charset=utf-8");
        headers.setInt(HttpHeaderNames.CONTENT_LENGTH, page.length);
        headers.set(HttpHeaderNames.CONTENT_SECURITY_POLICY, contentSecurityPolicy);
        headers.set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
        headers.set("X-Content-Type-Options", NOSNIFF);
        headers.set("Referrer-Policy", "no-referrer");
        reply.send(response);
    }

    void state(Reply reply, FullHttpRequest request, RequestPath path) {
        FullHttpResponse response = Responses.json(reply.alloc(), HttpResponseStatus.OK, stateJson());
        response.headers().set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_STORE);
        response.headers().set("X-Content-Type-Options", NOSNIFF);
        reply.send(response);
    }

    /** Any other path under {@code /dashboard/}: the page has no other parts, and a worker has none of them. */
    void unknown(Reply reply, FullHttpRequest request, RequestPath path) {
        reply.jsonError(HttpResponseStatus.NOT_FOUND,
                "Not found: the dashboard serves only " + PAGE + " and " + STATE);
    }

    String stateJson() {
        List<Worker> all = workers.all();
        SessionStats sessions = policies.sessionStats();
        Map<String, Double> kvHitRates = policies.kvCacheHitRates();
        ActivityWindow.Activity recent = activity.read();
        Map<String, Double> cachedRates = cachedTokenRates.get();
        long healthy = all.stream().filter(Worker::isHealthy).count();
        return Json.object(g -> {
            g.writeStringField("policy", config.policy());
            if (config.pdMode()) {
                g.writeStringField("prefill_policy", policies.prefillPolicy().name());
                g.writeStringField("decode_policy", policies.decodePolicy().name());
            }
            g.writeNumberField("uptime_secs", (System.nanoTime() - startedNanos) / 1_000_000_000L);
            g.writeBooleanField("kv_cache_hit_rate_reported", !kvHitRates.isEmpty());

            g.writeObjectFieldStart("totals");
            g.writeNumberField("workers", all.size());
            g.writeNumberField("healthy_workers", healthy);
            g.writeNumberField("active_sessions", sessions.activeSessions());
            g.writeNumberField("sessions_started", sessions.started());
            g.writeNumberField("sessions_released", sessions.released());
            g.writeNumberField("sessions_expired", sessions.expired());
            g.writeNumberField("requests_sent", all.stream().mapToLong(Worker::processed).sum());
            g.writeEndObject();

            g.writeObjectFieldStart("recent");
            g.writeNumberField("rate_secs", round(recent.rateSecs()));
            writeNullable(g, "requests_per_second", recent.requestsPerSecond());
            g.writeNumberField("latency_secs", round(recent.latencySecs()));
            g.writeNumberField("succeeded", recent.succeeded());
            g.writeNumberField("failed", recent.failed());
            writeNullable(g, "p50_ms", recent.p50Ms());
            writeNullable(g, "p99_ms", recent.p99Ms());
            g.writeEndObject();

            g.writeArrayFieldStart("workers");
            for (Worker w : all) {
                g.writeStartObject();
                g.writeStringField("url", w.shownUrl());
                g.writeStringField("model", w.modelId());
                g.writeStringField("role", w.role().name().toLowerCase(Locale.ROOT));
                g.writeBooleanField("healthy", w.isHealthy());
                g.writeStringField("circuit", w.circuitBreaker().state().name().toLowerCase(Locale.ROOT));
                g.writeNumberField("active_sessions", sessions.activeByWorker().getOrDefault(w.url(), 0));
                g.writeNumberField("in_flight", w.load());
                g.writeNumberField("requests_sent", w.processed());
                writeNullable(g, "requests_per_second", recent.requestsPerSecondByWorker().get(w.url()));
                writeNullable(g, "cached_token_rate", cachedRates.get(w.shownUrl()));
                if (!kvHitRates.isEmpty()) {
                    writeNullable(g, "kv_cache_hit_rate", kvHitRates.get(w.url()));
                }
                g.writeEndObject();
            }
            g.writeEndArray();
        });
    }

    private static void writeNullable(JsonGenerator g, String name, Double value)
            throws IOException {
        if (value == null) {
            g.writeNullField(name);
        } else {
            g.writeNumberField(name, round(value));
        }
    }

    /** Three decimals are more than the page shows, and keep the JSON short. */
    private static double round(double value) {
        return Math.round(value * 1000) / 1000.0;
    }

    private static String readResource() {
        try (InputStream in = DashboardRoutes.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + RESOURCE + " is missing from the router jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The CSP source for the page's one inline {@code <tag>} element: the SHA-256 of its text, as browsers hash it. */
    private static String inlineHash(String html, String tag) {
        int open = html.indexOf("<" + tag + ">");
        int close = html.indexOf("</" + tag + ">");
        if (open < 0 || close < open || html.indexOf("<" + tag + ">", open + 1) >= 0) {
            throw new IllegalStateException(RESOURCE + " must have exactly one plain <" + tag + "> element");
        }
        String text = html.substring(open + tag.length() + 2, close);
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return "'sha256-" + Base64.getEncoder().encodeToString(digest) + "'";
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
