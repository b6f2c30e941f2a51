package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/** The engine-process protocol in a child JVM: ready/error line, exit codes, SIGTERM and lifeline drains. */
@ExtendWith(NoLeaks.class)
class EngineRunnerTest {
    static MockWorkers mock;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.builder().count(1).build());
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    private static Process spawn(boolean lifeline) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                EngineMain.class.getName(), lifeline ? "--lifeline" : "--no-lifeline");
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        return pb.start();
    }

    private static JsonNode firstLine(Process p) throws Exception {
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        assertTrue(line != null, "no line on stdout");
        return TestHttp.JSON.readTree(line);
    }

    private static void send(Process p, String config, boolean close) throws Exception {
        OutputStream in = p.getOutputStream();
        in.write((config + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        if (close) {
            in.close();
        }
    }

    @Test
    void sigtermDrainsInFlightRequestsAndExitsZero() throws Exception {
        mock.worker(0).knobs().slowStreamMs(150);
        Process p = spawn(false);
        try {
            send(p, TestHttp.JSON.writeValueAsString(Fixture.base(mock.urls())), true);
            JsonNode ready = firstLine(p);
            assertEquals("ready", ready.get("event").asText(), ready.toString());
            assertNotEquals(0, ready.get("port").asInt());
            assertNotEquals(0, ready.get("metrics_port").asInt());
            assertEquals("http://127.0.0.1:" + ready.get("port").asInt(), ready.get("url").asText());
            String stream = "{\"prompt\":\"drain me\",\"max_tokens\":4,\"stream\":true}";
            CompletableFuture<HttpResponse<String>> inFlight = CompletableFuture.supplyAsync(() -> {
                try {
                    return TestHttp.post(ready.get("url").asText() + "/v1/completions", stream);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            assertTrue(ResilienceTest.eventually(() -> mock.worker(0).inFlight() == 1));
            p.destroy();
            HttpResponse<String> finished = inFlight.get(30, TimeUnit.SECONDS);
            assertEquals(200, finished.statusCode());
            assertTrue(finished.body().contains("[DONE]"), finished.body());
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue());
        } finally {
            mock.worker(0).knobs().slowStreamMs(0);
            p.destroyForcibly();
        }
    }

    @Test
    void lifelineEofStopsTheEngine() throws Exception {
        Process p = spawn(true);
        try {
            send(p, TestHttp.JSON.writeValueAsString(Fixture.base(mock.urls())), false);
            JsonNode ready = firstLine(p);
            assertEquals("ready", ready.get("event").asText());
            assertEquals(200, TestHttp.get(ready.get("url").asText() + "/health").statusCode());
            p.getOutputStream().close();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void configErrorsAndBindFailuresPrintAnErrorLine() throws Exception {
        Process invalid = spawn(false);
        send(invalid, "{\"policy\":\"nope\",\"port\":0,\"prometheus_port\":0}", true);
        JsonNode error = firstLine(invalid);
        assertEquals("error", error.get("event").asText());
        assertTrue(error.get("message").asText().contains("nope"), error.toString());
        assertTrue(invalid.waitFor(30, TimeUnit.SECONDS));
        assertNotEquals(0, invalid.exitValue());

        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            Map<String, Object> cfg = Fixture.base(List.of());
            cfg.put("port", taken.getLocalPort());
            Process clash = spawn(false);
            send(clash, TestHttp.JSON.writeValueAsString(cfg), true);
            JsonNode bindError = firstLine(clash);
            assertEquals("error", bindError.get("event").asText());
            assertTrue(bindError.get("message").asText().contains(Integer.toString(taken.getLocalPort())));
            assertTrue(clash.waitFor(30, TimeUnit.SECONDS));
            assertNotEquals(0, clash.exitValue());
        }
    }
}
