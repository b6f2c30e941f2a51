package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.CapturedRequest;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/** The status page and its state: what they show, who may see it, and what they never show. */
@ExtendWith(NoLeaks.class)
class DashboardTest {
    static final String ADMIN = "dashboard-admin-secret";
    static final String WORKER_KEY = "dashboard-worker-secret";
    static final String[] AUTH = {"Authorization", "Bearer " + ADMIN};
    static MockWorkers mock;
    static RouterServer router;
    static String base;

    @BeforeAll
    static void start() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(3).build());
        Map<String, Object> cfg = Fixture.base(List.of(mock.urls().get(0), mock.urls().get(1)));
        cfg.put("admin_api_key", ADMIN);
        cfg.put("api_key", WORKER_KEY);
        router = Fixture.start(cfg);
        base = router.url();
    }

    @AfterAll
    static void stop() {
        router.close();
        mock.close();
    }

    @Test
    void pageIsOneSelfContainedDocumentUnderAStrictPolicy() throws Exception {
        HttpResponse<String> page = TestHttp.get(base + "/dashboard");
        assertEquals(200, page.statusCode());
        assertEquals("text/html; charset=utf-8", page.headers().firstValue("content-type").orElseThrow());
        String html = page.body();
        assertTrue(html.startsWith("<!doctype html>"), html);
        assertFalse(Pattern.compile("(src|href)\\s*=\\s*\"(https?:)?//").matcher(html).find(), "no external resources");
        assertFalse(html.contains("@import") || html.contains("url("), "no fetched styles or fonts");

        String csp = page.headers().firstValue("content-security-policy").orElseThrow();
        assertTrue(csp.startsWith("default-src 'none'; script-src 'sha256-"), csp);
        assertFalse(csp.contains("unsafe-inline"), csp);
        assertEquals(sha256Of(html, "script"), source(csp, "script-src"));
        assertEquals(sha256Of(html, "style"), source(csp, "style-src"));
        assertEquals("nosniff", page.headers().firstValue("x-content-type-options").orElseThrow());

        assertEquals(html, TestHttp.get(base + "/dashboard/").body());
        assertEquals(405, TestHttp.post(base + "/dashboard", "").statusCode());
    }

    @Test
    void stateNeedsTheAdminKeyAndSaysWhy() throws Exception {
        for (String[] headers : List.of(new String[0], new String[] {"Authorization", "Bearer wrong"},
                new String[] {"Authorization", "Basic " + ADMIN})) {
            HttpResponse<String> denied = TestHttp.get(base + "/dashboard/state", headers);
            assertEquals(401, denied.statusCode());
            assertEquals("Bearer", denied.headers().firstValue("www-authenticate").orElseThrow());
            assertEquals("Missing or invalid admin API key (send 'Authorization: Bearer <admin_api_key>')",
                    TestHttp.json(denied).get("error").get("message").asText());
        }
        HttpResponse<String> allowed = TestHttp.get(base + "/dashboard/state", AUTH);
        assertEquals(200, allowed.statusCode());
        assertEquals("no-store", allowed.headers().firstValue("cache-control").orElseThrow());
    }

    @Test
    void stateShowsWorkersSessionsAndTotalsButNoKey() throws Exception {
        String session = "dash-" + System.nanoTime();
        HttpResponse<String> turn = TestHttp.post(base + "/v1/chat/completions", TestHttp.chat("mock", "hi"),
                "X-Session-ID", session);
        assertEquals(200, turn.statusCode(), turn.body());

        HttpResponse<String> response = TestHttp.get(base + "/dashboard/state", AUTH);
        JsonNode state = TestHttp.json(response);
        assertEquals("sticky_least_loaded", state.get("policy").asText());
        assertFalse(state.get("kv_cache_hit_rate_reported").asBoolean());
        assertTrue(state.get("uptime_secs").isIntegralNumber());
        JsonNode workers = state.get("workers");
        assertEquals(2, workers.size());
        List<String> urls = new ArrayList<>();
        int active = 0;
        for (JsonNode w : workers) {
            urls.add(w.get("url").asText());
            assertTrue(w.get("healthy").asBoolean());
            assertEquals("closed", w.get("circuit").asText());
            assertEquals("regular", w.get("role").asText());
            assertFalse(w.has("kv_cache_hit_rate"), "no policy reports it, so the field is absent");
            active += w.get("active_sessions").asInt();
        }
        assertEquals(List.of(mock.urls().get(0), mock.urls().get(1)), urls);
        assertEquals(router.sessionStats().activeSessions(), active);
        assertEquals(active, state.get("totals").get("active_sessions").asInt());
        assertTrue(state.get("totals").get("requests_sent").asLong() >= 1);
        assertEquals(2, state.get("totals").get("healthy_workers").asInt());

        assertFalse(response.body().contains(ADMIN), "the admin key never leaves the router");
        assertFalse(response.body().contains(WORKER_KEY), "nor does the workers' key");
        assertFalse(TestHttp.get(base + "/dashboard").body().contains(ADMIN));

        router.finishSession(session);
        JsonNode after = TestHttp.json(TestHttp.get(base + "/dashboard/state", AUTH));
        assertEquals(router.sessionStats().activeSessions(), after.get("totals").get("active_sessions").asInt());
    }

    @Test
    void markupInWorkerNamesComesBackAsPlainJsonStrings() throws Exception {
        String url = "http://127.0.0.1:1/<script>alert('url')</script>";
        String model = "<img src=x onerror=alert('model')>";
        router.workers().add(Worker.builder(url).modelId(model).build());
        try {
            HttpResponse<String> response = TestHttp.get(base + "/dashboard/state", AUTH);
            assertEquals("application/json", response.headers().firstValue("content-type").orElseThrow());
            assertEquals("nosniff", response.headers().firstValue("x-content-type-options").orElseThrow());
            JsonNode shown = null;
            for (JsonNode w : TestHttp.json(response).get("workers")) {
                if (w.get("url").asText().equals(url)) {
                    shown = w;
                }
            }
            assertNotNull(shown, response.body());
            assertEquals(model, shown.get("model").asText());
        } finally {
            router.workers().removeByBaseUrl(url);
        }
    }

    @Test
    void unknownPathsUnderTheDashboardAre404AndNeverReachAWorker() throws Exception {
        for (MockWorker w : mock.workers()) {
            w.clearCaptured();
        }
        for (String path : List.of("/dashboard/x", "/dashboard/state/x", "/dashboard/index.html", "/DASHBOARD/STATEX",
                "/dashboard/static/app.js")) {
            for (String method : List.of("GET", "POST")) {
                HttpResponse<String> response = TestHttp.method(method, base + path, method.equals("GET") ? null : "{}");
                assertEquals(404, response.statusCode(), method + " " + path);
                assertEquals("Not found: the dashboard serves only /dashboard and /dashboard/state",
                        TestHttp.json(response).get("error").get("message").asText());
            }
        }
        for (MockWorker w : mock.workers()) {
            for (CapturedRequest c : w.captured()) {
                assertFalse(c.path().toLowerCase(java.util.Locale.ROOT).contains("dashboard"), c.uri());
            }
        }
    }

    @Test
    void withValidationUrlsThePageOpensAndTheStateNeedsAValidatedKey() throws Exception {
        try (MockWorkers validator = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.requireApiKey("user-key")).build())) {
            Map<String, Object> cfg = Fixture.base(List.of(mock.urls().get(0)));
            cfg.put("api_key_validation_urls", List.of(validator.urls().get(0) + "/v1/models"));
            try (RouterServer guarded = Fixture.start(cfg)) {
                assertEquals(200, TestHttp.get(guarded.url() + "/dashboard").statusCode());
                assertEquals(401, TestHttp.get(guarded.url() + "/dashboard/state").statusCode());
                assertEquals(401, TestHttp.get(guarded.url() + "/dashboard/state", "Authorization", "Bearer nope")
                        .statusCode());
                assertEquals(200, TestHttp.get(guarded.url() + "/dashboard/state", "Authorization", "Bearer user-key")
                        .statusCode());
            }
        }
    }

    @Test
    void withoutAnAdminKeyTheStateIsOpen() throws Exception {
        try (RouterServer open = Fixture.start(Fixture.base(List.of(mock.urls().get(2))))) {
            HttpResponse<String> response = TestHttp.get(open.url() + "/dashboard/state");
            assertEquals(200, response.statusCode());
            assertEquals(mock.urls().get(2), TestHttp.json(response).get("workers").get(0).get("url").asText());
        }
    }

    /** The CSP source a browser computes for the page's one inline element of {@code tag}. */
    private static String sha256Of(String html, String tag) throws Exception {
        String open = "<" + tag + ">";
        String text = html.substring(html.indexOf(open) + open.length(), html.indexOf("</" + tag + ">"));
        byte[] digest = java.security.MessageDigest.getInstance("SHA-256")
                .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return "'sha256-" + java.util.Base64.getEncoder().encodeToString(digest) + "'";
    }

    private static String source(String csp, String directive) {
        Matcher m = Pattern.compile(directive + " ([^;]+)").matcher(csp);
        assertTrue(m.find(), csp);
        return m.group(1);
    }
}
