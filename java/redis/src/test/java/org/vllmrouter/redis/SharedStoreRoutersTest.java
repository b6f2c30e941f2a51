package org.vllmrouter.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vllmrouter.redis.SessionTableOnRedisTests.eventually;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;
import org.vllmrouter.server.RouterServer;

/**
 * Three routers (RouterServer instances, each with its own store connection) behind no load balancer: every
 * request of a session goes to a random router, as behind a round-robin balancer. Over HTTP, with mock workers.
 */
class SharedStoreRoutersTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    private static final int CLIENTS = 6;

    private RedisServer redis;
    private MockWorkers mocks;
    private final List<RouterServer> routers = new ArrayList<>();

    /** One turn as the client saw it: the worker, and the phase of the test when it was sent and when answered. */
    private record Turn(String worker, int sentIn, int answeredIn) {
        boolean wholeIn(int phase) {
            return sentIn == phase && answeredIn == phase;
        }
    }

    @BeforeEach
    void setUp() throws Exception {
        redis = RedisServer.start();
        mocks = MockWorkers.start(MockConfig.builder().count(4).build());
        for (int i = 0; i < 3; i++) {
            routers.add(startRouter());
        }
    }

    @AfterEach
    void tearDown() throws Exception {
        routers.forEach(RouterServer::close);
        mocks.close();
        redis.close();
    }

    private RouterServer startRouter() throws Exception {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("worker_urls", mocks.urls());
        c.put("host", "127.0.0.1");
        c.put("port", 0);
        c.put("prometheus_port", 0);
        c.put("policy", "sticky_least_loaded");
        c.put("worker_startup_check_interval", 1);
        c.put("worker_startup_timeout_secs", 10);
        c.put("session_store", redis.url());
        return RouterServer.start(RouterConfig.fromJson(JSON.writeValueAsString(c)));
    }

    private static HttpResponse<String> post(String url, String body, String... headers)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode sessions(RouterServer router) throws Exception {
        HttpRequest get = HttpRequest.newBuilder(URI.create(router.url() + "/sessions")).GET().build();
        return JSON.readTree(HTTP.send(get, HttpResponse.BodyHandlers.ofString()).body());
    }

    /** One turn of session {@code id} through {@code router}; the worker that answered, or the failure. */
    private static String turn(RouterServer router, String id) throws Exception {
        HttpResponse<String> r = post(router.url() + "/v1/chat/completions",
                "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"turn of " + id + "\"}],\"max_tokens\":2}",
                "X-Session-ID", id);
        assertEquals(200, r.statusCode(), r.body());
        return r.headers().firstValue("x-worker-id").orElseThrow();
    }

    private static void finish(RouterServer router, String id) throws Exception {
        HttpResponse<String> r = post(router.url() + "/finish_session?session_id=" + id, "");
        assertEquals(200, r.statusCode(), r.body());
    }

    /**
     * Clients start sessions, send their turns through random routers and finish about half of them, until
     * {@code stop}; returns each session's turns and fills {@code finished}.
     */
    private Map<String, List<Turn>> storm(AtomicBoolean stop, AtomicInteger phase, Map<String, Boolean> finished,
                                          int sessionsPerClient) throws Exception {
        Map<String, List<Turn>> seen = new ConcurrentHashMap<>();
        ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                int client = c;
                done.add(clients.submit(() -> {
                    SplittableRandom random = new SplittableRandom(0xabcL + client);
                    for (int k = 0; !stop.get() && k < sessionsPerClient; k++) {
                        String id = "client" + client + "-session" + k;
                        List<Turn> turns = new ArrayList<>();
                        seen.put(id, turns);
                        for (int t = 1 + random.nextInt(4); t > 0; t--) {
                            int sent = phase.get();
                            String worker = turn(routers.get(random.nextInt(routers.size())), id);
                            turns.add(new Turn(worker, sent, phase.get()));
                        }
                        if (random.nextBoolean()) {
                            finish(routers.get(random.nextInt(routers.size())), id);
                            finished.put(id, true);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(300, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
        }
        return seen;
    }

    private void assertGlobalCounts(int live) throws Exception {
        for (RouterServer router : routers) {
            JsonNode s = sessions(router);
            assertEquals(live, s.get("active_sessions").asInt(), s.toString());
            int sum = 0;
            for (JsonNode n : s.get("active_by_worker")) {
                assertTrue(n.asInt() >= 0, s.toString());
                sum += n.asInt();
            }
            assertEquals(live, sum, s.toString());
            assertFalse(s.get("degraded").asBoolean(), s.toString());
            assertEquals(redis.url(), s.get("session_store").asText());
        }
    }

    @Test
    void threeRoutersShareSessionsAndARestartedRouterKeepsThem() throws Exception {
        Map<String, Boolean> finished = new ConcurrentHashMap<>();
        Map<String, List<Turn>> seen = storm(new AtomicBoolean(), new AtomicInteger(), finished, 25);
        Map<String, String> workerOf = new HashMap<>();
        seen.forEach((id, turns) -> {
            assertEquals(1, turns.stream().map(Turn::worker).distinct().count(), id + " served by one worker: " + turns);
            workerOf.put(id, turns.get(0).worker());
        });
        int live = seen.size() - finished.size();
        assertGlobalCounts(live);
        JsonNode counts = sessions(routers.get(0)).get("active_by_worker");
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (JsonNode n : counts) {
            min = Math.min(min, n.asInt());
            max = Math.max(max, n.asInt());
        }
        assertTrue(max - min <= CLIENTS + 1, "least-loaded across routers: " + counts);

        routers.remove(0).close();
        routers.add(startRouter());
        RouterServer restarted = routers.get(routers.size() - 1);
        for (Map.Entry<String, String> e : workerOf.entrySet()) {
            if (!finished.containsKey(e.getKey())) {
                assertEquals(e.getValue(), turn(restarted, e.getKey()), e.getKey() + " after a router restart");
            }
        }
        assertGlobalCounts(live);
    }

    @Test
    void redisKilledAndRestartedMidStormKeepsServingAndReconciles() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger phase = new AtomicInteger(1);
        Map<String, Boolean> finished = new ConcurrentHashMap<>();
        ExecutorService driver = Executors.newSingleThreadExecutor();
        try {
            Future<Map<String, List<Turn>>> storm = driver.submit(() -> storm(stop, phase, finished, 100_000));
            eventually("some sessions before the kill", () -> finished.size() >= 20);
            phase.set(2);
            redis.kill();
            eventually("every router noticed", () -> routers.stream().allMatch(r -> degraded(r)));
            int finishedBefore = finished.size();
            eventually("sessions go on without the store", () -> finished.size() >= finishedBefore + 20);
            redis.restart();
            eventually("every router reconciled", () -> routers.stream().noneMatch(r -> degraded(r)));
            phase.set(3);
            int finishedAfter = finished.size();
            eventually("sessions after the recovery", () -> finished.size() >= finishedAfter + 20);
            stop.set(true);
            Map<String, List<Turn>> seen = storm.get(300, TimeUnit.SECONDS);

            seen.forEach((id, turns) -> {
                if (turns.stream().allMatch(t -> t.wholeIn(1)) || turns.stream().allMatch(t -> t.wholeIn(3))) {
                    assertEquals(1, turns.stream().map(Turn::worker).distinct().count(), id + ": " + turns);
                }
            });
            eventually("bindings of every router are back", () -> activeOn(routers.get(0)) == seen.size() - finished.size());
            assertGlobalCounts(seen.size() - finished.size());
            for (String id : seen.keySet()) {
                if (!finished.containsKey(id)) {
                    String worker = turn(routers.get(0), id);
                    assertEquals(worker, turn(routers.get(1), id), id);
                    assertEquals(worker, turn(routers.get(2), id), id);
                }
            }
            assertGlobalCounts(seen.size() - finished.size());
        } finally {
            stop.set(true);
            driver.shutdownNow();
        }
    }

    private static boolean degraded(RouterServer router) {
        try {
            return sessions(router).get("degraded").asBoolean();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static int activeOn(RouterServer router) {
        try {
            return sessions(router).get("active_sessions").asInt();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
