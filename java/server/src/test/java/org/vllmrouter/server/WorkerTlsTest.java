package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.vllmrouter.core.worker.CircuitBreaker;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;
import org.vllmrouter.server.proxy.WorkerTls;

/**
 * {@code https://} workers: the proxy, streaming, health checks and fan-outs over verified TLS, and what a user sees
 * when the certificate does not verify. Each worker is a mock behind a TLS front holding a certificate from a CA this
 * test makes; the router trusts that CA the way {@code SSL_CERT_FILE} makes it trust one.
 */
@ExtendWith(NoLeaks.class)
class WorkerTlsTest {
    @TempDir
    static Path dir;
    static MockWorkers mock;
    static TestPki trustedCa;
    static TestPki otherCa;
    static Path trustedBundle;

    @BeforeAll
    static void start() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(2).build());
        trustedCa = TestPki.newCa("router test CA");
        otherCa = TestPki.newCa("a CA the router does not trust");
        trustedBundle = trustedCa.writeCaBundle(dir);
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    private static RouterServer router(Map<String, Object> cfg) throws Exception {
        return RouterServer.start(Fixture.settings(cfg),
                RouterServer.Options.DEFAULTS.withWorkerTls(WorkerTls.trusting(trustedBundle)));
    }

    @Test
    void proxiesToAnHttpsWorkerOverVerifiedTls() throws Exception {
        MockWorker worker = mock.worker(0);
        try (TlsFront front = TlsFront.start(trustedCa.issue("localhost").serverContext(), worker.port());
             RouterServer router = router(Fixture.base(List.of(front.url())))) {
            worker.clearCaptured();
            HttpResponse<String> r = TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"over tls\"}");
            assertEquals(200, r.statusCode(), r.body());
            assertTrue(TestHttp.json(r).has("choices"), r.body());
            assertTrue(front.handshakes() >= 2, "the start-up health check and the request each shook hands");
            String host = worker.captured("/v1/completions").get(0).headers().stream()
                    .filter(h -> h.getKey().equalsIgnoreCase("host")).findFirst().orElseThrow().getValue();
            assertEquals(URI.create(front.url()).getAuthority(), host);
        }
    }

    @Test
    void streamsServerSentEventsThroughTls() throws Exception {
        try (TlsFront front = TlsFront.start(trustedCa.issue("localhost").serverContext(), mock.worker(0).port());
             RouterServer router = router(Fixture.base(List.of(front.url())))) {
            String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"stream over tls\"}],"
                    + "\"max_tokens\":5,\"stream\":true}";
            HttpResponse<InputStream> response = TestHttp.CLIENT.send(
                    HttpRequest.newBuilder(URI.create(router.url() + "/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, response.statusCode());
            assertTrue(response.headers().firstValue("content-type").orElseThrow().startsWith("text/event-stream"));
            try (BufferedReader reader = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
                List<String> events = reader.lines().filter(l -> !l.isEmpty()).toList();
                assertTrue(events.size() >= 3 && events.get(0).startsWith("data: {"), events.toString());
                assertEquals("data: [DONE]", events.get(events.size() - 1));
            }
        }
    }

    @Test
    void healthChecksAndFanOutsVerifyTheCertificate() throws Exception {
        MockWorker worker = mock.worker(0);
        try (TlsFront front = TlsFront.start(trustedCa.issue("localhost").serverContext(), worker.port())) {
            Map<String, Object> cfg = Fixture.base(List.of(front.url()));
            cfg.put("health_check_interval_secs", 1);
            cfg.put("health_failure_threshold", 1);
            cfg.put("health_success_threshold", 1);
            try (RouterServer router = router(cfg)) {
                Worker registered = router.workers().all().get(0);
                worker.clearCaptured();
                HttpResponse<String> flush = TestHttp.post(router.url() + "/flush_cache", "");
                assertEquals(200, flush.statusCode(), flush.body());
                assertEquals(1, worker.captured("/flush_cache").size(), "the fan-out reached the worker through TLS");
                assertTrue(ResilienceTest.eventually(() -> !worker.captured("/health").isEmpty()),
                        "periodic health checks reach the worker through TLS");

                // The worker's certificate is renewed by a CA the router does not trust: checks start failing.
                front.present(otherCa.issue("localhost").serverContext());
                assertTrue(ResilienceTest.eventually(() -> !registered.isHealthy()), "an untrusted worker is unhealthy");
                JsonNode listed = TestHttp.json(TestHttp.get(router.url() + "/workers")).get("workers").get(0);
                assertFalse(listed.get("is_healthy").asBoolean(), listed.toString());

                front.present(trustedCa.issue("localhost").serverContext());
                assertTrue(ResilienceTest.eventually(registered::isHealthy), "trusted again, healthy again");
            }
        }
    }

    static Stream<Arguments> certificatesThatDoNotVerify() {
        return Stream.of(
                Arguments.of("issued by an unknown CA", otherCa.issue("localhost"), "certificate not trusted"),
                Arguments.of("issued for another host", trustedCa.issue("worker.invalid"),
                        "certificate does not match host localhost"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("certificatesThatDoNotVerify")
    void aCertificateThatDoesNotVerifyIs502AndAWorkerFailure(String what, TestPki.Issued certificate, String reason)
            throws Exception {
        MockWorker plain = mock.worker(1);
        try (TlsFront front = TlsFront.start(certificate.serverContext(), mock.worker(0).port())) {
            Map<String, Object> cfg = Fixture.base(List.of(plain.url(), front.url()));
            cfg.put("policy", "round_robin");
            cfg.put("disable_retries", true);
            cfg.put("cb_failure_threshold", 1);
            try (RouterServer router = router(cfg)) {
                List<HttpResponse<String>> answers = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    answers.add(TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}"));
                }
                HttpResponse<String> refused = answers.stream().filter(r -> r.statusCode() != 200).findFirst()
                        .orElseThrow(() -> new AssertionError("round robin sent no request to the TLS worker"));
                assertEquals(502, refused.statusCode());
                assertEquals("TLS handshake with worker " + front.url() + " failed: " + reason, refused.body());
                assertEquals(0, front.handshakes());

                Worker tlsWorker = router.workers().get(front.url()).orElseThrow();
                assertEquals(CircuitBreaker.State.OPEN, tlsWorker.circuitBreaker().state(),
                        "the failed handshake counted as a worker failure");
                assertEquals(0, tlsWorker.load());
                String metrics = TestHttp.get("http://127.0.0.1:" + router.metricsPort() + "/metrics").body();
                assertTrue(metrics.contains("vllm_router_cb_outcomes_total{outcome=\"failure\",worker=\""
                        + front.url() + "\"} 1.0"), metrics);
                assertEquals(200, TestHttp.post(router.url() + "/v1/completions", "{\"prompt\":\"x\"}").statusCode(),
                        "with its circuit open the untrusted worker gets no more requests");
            }
        }
    }

    @Test
    void startUpNamesTheTlsFailureOfAnUntrustedWorker() throws Exception {
        try (TlsFront front = TlsFront.start(otherCa.issue("localhost").serverContext(), mock.worker(0).port())) {
            Map<String, Object> cfg = Fixture.base(List.of(front.url()));
            cfg.put("worker_startup_timeout_secs", 1);
            RouterStartException e = assertThrows(RouterStartException.class, () -> router(cfg));
            assertTrue(e.getMessage().contains(
                    "TLS handshake with worker " + front.url() + " failed: certificate not trusted"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"), "one line");
        }
    }

    @Test
    void aTrustBundleThatCannotBeReadIsNamed() throws Exception {
        Path missing = dir.resolve("no-such-bundle.pem");
        Map<String, Object> cfg = Fixture.base(List.of(mock.worker(1).url()));
        cfg.put("worker_startup_timeout_secs", 1);
        try (TlsFront front = TlsFront.start(trustedCa.issue("localhost").serverContext(), mock.worker(1).port());
             RouterServer router = RouterServer.start(Fixture.settings(cfg),
                     RouterServer.Options.DEFAULTS.withWorkerTls(WorkerTls.trusting(missing)))) {
            HttpResponse<String> added = TestHttp.post(router.url() + "/add_worker?url=" + front.url(), "");
            assertEquals(400, added.statusCode());
            assertTrue(added.body().contains("TLS to worker " + front.url() + " is not possible: SSL_CERT_FILE="
                    + missing + " cannot be read"), added.body());
        }
    }

    @Test
    void theEngineTrustsTheBundleThatSslCertFileNames() throws Exception {
        try (TlsFront front = TlsFront.start(trustedCa.issue("localhost").serverContext(), mock.worker(0).port())) {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            ProcessBuilder pb = new ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
                    System.getProperty("java.class.path"), EngineMain.class.getName());
            pb.environment().put(WorkerTls.CERT_FILE_VARIABLE, trustedBundle.toString());
            pb.redirectError(ProcessBuilder.Redirect.DISCARD);
            Process engine = pb.start();
            try {
                try (OutputStream in = engine.getOutputStream()) {
                    in.write(TestHttp.JSON.writeValueAsBytes(Fixture.base(List.of(front.url()))));
                }
                String line = new BufferedReader(new InputStreamReader(engine.getInputStream(), StandardCharsets.UTF_8))
                        .readLine();
                JsonNode ready = TestHttp.JSON.readTree(line);
                assertEquals("ready", ready.get("event").asText(), line);
                HttpResponse<String> r = TestHttp.post(ready.get("url").asText() + "/v1/completions",
                        "{\"prompt\":\"trusted through SSL_CERT_FILE\"}");
                assertEquals(200, r.statusCode(), r.body());
            } finally {
                engine.destroy();
                engine.waitFor(30, TimeUnit.SECONDS);
                engine.destroyForcibly();
            }
        }
    }
}
