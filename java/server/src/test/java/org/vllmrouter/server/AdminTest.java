package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.CapturedRequest;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/** Admin routes, the /workers REST routes, admin-key protection, path hardening and the outbound API key. */
@ExtendWith(NoLeaks.class)
class AdminTest {
    static final String ADMIN = "admin-secret";
    static final String[] AUTH = {"Authorization", "Bearer " + ADMIN};
    static MockWorkers mock;
    static RouterServer router;
    static String base;

    @BeforeAll
    static void start() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(3).all(k -> k.requireApiKey("worker-key")).build());
        Map<String, Object> cfg = Fixture.base(List.of(mock.urls().get(0), mock.urls().get(1)));
        cfg.put("admin_api_key", ADMIN);
        cfg.put("api_key", "worker-key");
        cfg.put("policy", "round_robin");
        router = Fixture.start(cfg);
        base = router.url();
    }

    @AfterAll
    static void stop() {
        router.close();
        mock.close();
    }

    @Test
    void adminRoutesNeedTheAdminKey() throws Exception {
        for (String path : List.of("/list_workers", "/get_loads", "/sessions", "/workers")) {
            HttpResponse<String> denied = TestHttp.get(base + path);
            assertEquals(401, denied.statusCode(), path);
            assertTrue(TestHttp.json(denied).get("error").get("message").asText().contains("admin"));
            assertEquals(401, TestHttp.get(base + path, "Authorization", "Bearer wrong").statusCode(), path);
            assertEquals(200, TestHttp.get(base + path, AUTH).statusCode(), path);
        }
        assertEquals(401, TestHttp.post(base + "/finish_session?session_id=s", "").statusCode());
        assertEquals(200, TestHttp.post(base + "/finish_session?session_id=s", "", AUTH).statusCode());
        assertEquals(200, TestHttp.get(base + "/health").statusCode());
    }

    @Test
    void pathTricksNeverReachTheFallback() throws Exception {
        for (MockWorker w : mock.workers()) {
            w.clearCaptured();
        }
        List<String> tricks = List.of("/finish_session/", "/FINISH_SESSION", "/Finish_Session/", "/%66inish_session",
                "/finish%5Fsession", "//finish_session", "/x/../finish_session", "/./finish_session",
                "/%2e%2e/finish_session", "/finish_session%2F", "/%2Ffinish_session", "/finish_session%00",
                "/list_workers/.", "/workers%2Fx", "/v1/..%2Flist_workers", "/%2E/list_workers", "/list_workers\\");
        for (String path : tricks) {
            String raw = TestHttp.raw(router.port(), "POST " + path + "?session_id=s HTTP/1.1\r\nHost: x\r\n"
                    + "Content-Length: 0\r\nConnection: close\r\n\r\n");
            int status = TestHttp.status(raw);
            assertTrue(status == 400 || status == 401, path + " -> " + raw);
        }
        for (MockWorker w : mock.workers()) {
            for (CapturedRequest c : w.captured()) {
                String p = c.path().toLowerCase(java.util.Locale.ROOT);
                assertTrue(!p.contains("finish") && !p.contains("list_workers") && !p.contains("workers"), c.uri());
            }
        }
    }

    @Test
    void fallbackSendsTheOutboundKeyNotTheClients() throws Exception {
        HttpResponse<String> r = TestHttp.post(base + "/tokenize", "{\"prompt\":\"abc\"}", "Authorization", "Bearer client");
        assertEquals(200, r.statusCode(), r.body());
        // Inference routes forward the client's own Authorization, as upstream: the worker rejects it here.
        assertEquals(401, TestHttp.post(base + "/v1/completions", "{\"prompt\":\"x\"}", "Authorization", "Bearer client")
                .statusCode());
    }

    @Test
    void inboundKeysAreCheckedAgainstValidationUrls() throws Exception {
        MockWorker validator = mock.worker(2);
        Map<String, Object> cfg = Fixture.base(List.of(mock.urls().get(0)));
        cfg.put("api_key", "worker-key");
        cfg.put("api_key_validation_urls", List.of("http://127.0.0.1:1/unreachable", validator.url() + "/v1/models"));
        try (RouterServer guarded = Fixture.start(cfg)) {
            HttpResponse<String> none = TestHttp.get(guarded.url() + "/liveness");
            assertEquals(401, none.statusCode());
            assertEquals("You must provide a valid API key. Obtain one from http://helmholtz.cloud", none.body());
            assertEquals(401, TestHttp.get(guarded.url() + "/liveness", "Authorization", "Bearer wrong").statusCode());
            assertEquals(200, TestHttp.get(guarded.url() + "/liveness", "Authorization", "Bearer worker-key").statusCode());
            assertEquals(200, TestHttp.get(guarded.url() + "/liveness", "Authorization", "Bearer worker-key").statusCode());
        }
    }

    @Test
    void aUrlNoWorkerCanAnswerOnIsRefusedAtOnce() throws Exception {
        Map<String, String> refused = Map.of(
                "http://127.0.0.1:0", "Invalid worker URL http://127.0.0.1:0: Port must be between 1 and 65535",
                "http://:8000", "Invalid worker URL http://:8000: URL must have a valid host",
                "ftp://w:8000", "URL must start with http://, https://, or grpc://");
        for (Map.Entry<String, String> e : refused.entrySet()) {
            String encoded = java.net.URLEncoder.encode(e.getKey(), java.nio.charset.StandardCharsets.UTF_8);
            HttpResponse<String> query = TestHttp.post(base + "/add_worker?url=" + encoded, "", AUTH);
            assertEquals(400, query.statusCode(), e.getKey());
            assertEquals(e.getValue(), query.body());
            HttpResponse<String> rest = TestHttp.post(base + "/workers", "{\"url\": \"" + e.getKey() + "\"}", AUTH);
            assertEquals(400, rest.statusCode(), e.getKey());
            assertEquals(e.getValue(), TestHttp.json(rest).get("error").asText());
        }
        String listed = TestHttp.get(base + "/list_workers", AUTH).body();
        refused.keySet().forEach(url -> assertTrue(!listed.contains(url), listed));
    }

    @Test
    void workerManagement() throws Exception {
        String third = mock.urls().get(2);
        JsonNode listed = TestHttp.json(TestHttp.get(base + "/list_workers", AUTH));
        assertEquals(2, listed.get("urls").size());
        HttpResponse<String> added = TestHttp.post(base + "/add_worker?url=" + third, "", AUTH);
        assertEquals(200, added.statusCode(), added.body());
        assertEquals("Successfully added worker: " + third, added.body());
        HttpResponse<String> again = TestHttp.post(base + "/add_worker?url=" + third, "", AUTH);
        assertEquals(400, again.statusCode());
        assertEquals("Worker " + third + " already exists", again.body());
        assertEquals(400, TestHttp.post(base + "/add_worker", "", AUTH).statusCode());

        JsonNode workers = TestHttp.json(TestHttp.get(base + "/workers", AUTH));
        assertEquals(3, workers.get("total").asInt());
        assertEquals(3, workers.get("stats").get("regular_count").asInt());
        assertEquals("regular", workers.get("workers").get(0).get("worker_type").asText());

        String encoded = java.net.URLEncoder.encode(third, java.nio.charset.StandardCharsets.UTF_8);
        HttpResponse<String> one = TestHttp.get(base + "/workers/" + encoded, AUTH);
        assertEquals(200, one.statusCode(), one.body());
        assertEquals(third, TestHttp.json(one).get("url").asText());
        HttpResponse<String> deleted = TestHttp.method("DELETE", base + "/workers/" + encoded, null, AUTH);
        assertEquals(200, deleted.statusCode());
        assertTrue(TestHttp.json(deleted).get("success").asBoolean());
        HttpResponse<String> missing = TestHttp.get(base + "/workers/" + encoded, AUTH);
        assertEquals(404, missing.statusCode());
        assertEquals("WORKER_NOT_FOUND", TestHttp.json(missing).get("code").asText());

        HttpResponse<String> viaRest = TestHttp.post(base + "/workers", "{\"url\":\"" + third + "\"}", AUTH);
        assertEquals(200, viaRest.statusCode(), viaRest.body());
        HttpResponse<String> badRest = TestHttp.post(base + "/workers", "{\"nope\":1}", AUTH);
        assertEquals(400, badRest.statusCode());
        assertEquals("ADD_WORKER_FAILED", TestHttp.json(badRest).get("code").asText());
        HttpResponse<String> removed = TestHttp.post(base + "/remove_worker?url=" + third, "", AUTH);
        assertEquals("Successfully removed worker: " + third, removed.body());
        assertEquals(2, TestHttp.json(TestHttp.get(base + "/list_workers", AUTH)).get("urls").size());
    }

    @Test
    void loadsAndCacheFlush() throws Exception {
        JsonNode loads = TestHttp.json(TestHttp.get(base + "/get_loads", AUTH));
        assertEquals(2, loads.get("workers").size());
        assertTrue(loads.get("workers").get(0).get("load").asInt() >= -1);
        HttpResponse<String> flushed = TestHttp.post(base + "/flush_cache", "", AUTH);
        assertEquals(200, flushed.statusCode(), flushed.body());
        assertEquals("Cache flushed on all servers", flushed.body());
    }
}
