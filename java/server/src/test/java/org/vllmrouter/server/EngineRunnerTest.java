package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.PrintStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/**
 * The engine-process protocol: ready/error line and exit codes in-process, the SIGTERM drain in a child JVM
 * (signals and exit status need a process of their own).
 */
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

    private static Process spawn() throws Exception {
        return spawn(ProcessBuilder.Redirect.DISCARD);
    }

    private static Process spawn(ProcessBuilder.Redirect stderr, String... jvmOptions) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"));
        command.addAll(List.of(jvmOptions));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), EngineMain.class.getName()));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.redirectError(stderr);
        return pb.start();
    }

    private static JsonNode firstLine(Process p) throws Exception {
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        assertTrue(line != null, "no line on stdout");
        return TestHttp.JSON.readTree(line);
    }

    private static void send(Process p, String config) throws Exception {
        try (OutputStream in = p.getOutputStream()) {
            in.write((config + "\n").getBytes(StandardCharsets.UTF_8));
        }
    }

    @Test
    void sigtermDrainsInFlightRequestsAndExitsZero(@TempDir Path dir) throws Exception {
        // The client holds the stream's first event before the signal, so the request is certainly in flight when
        // the drain starts; the second event follows a second later (the mock has no gate to hold it longer).
        mock.worker(0).knobs().slowStreamMs(1000);
        Path stderr = dir.resolve("stderr.txt");
        Process p = spawn(ProcessBuilder.Redirect.to(stderr.toFile()));
        try {
            send(p, TestHttp.JSON.writeValueAsString(Fixture.base(mock.urls())));
            JsonNode ready = firstLine(p);
            assertEquals("ready", ready.get("event").asText(), ready.toString());
            assertNotEquals(0, ready.get("port").asInt());
            assertNotEquals(0, ready.get("metrics_port").asInt());
            assertEquals("http://127.0.0.1:" + ready.get("port").asInt(), ready.get("url").asText());
            assertEquals(ready.get("url").asText(), ready.get("client_url").asText(),
                    "a loopback bind is reached as is");
            String stream = "{\"prompt\":\"drain me\",\"max_tokens\":4,\"stream\":true}";
            try (Socket client = new Socket("127.0.0.1", ready.get("port").asInt())) {
                client.setSoTimeout(30_000);
                client.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                        + "Content-Type: application/json\r\nContent-Length: " + stream.length() + "\r\n\r\n" + stream)
                        .getBytes(StandardCharsets.UTF_8));
                BufferedReader reader = new BufferedReader(
                        new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
                assertEquals("HTTP/1.1 200 OK", reader.readLine());
                String line;
                do {
                    line = reader.readLine();
                    assertTrue(line != null, "the stream ended before its first event");
                } while (!line.startsWith("data:"));
                p.destroy();
                String rest = String.join("\n", reader.lines().toList());
                assertTrue(rest.contains("data: [DONE]"), rest);
            }
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue());
        } finally {
            mock.worker(0).knobs().slowStreamMs(0);
            p.destroyForcibly();
        }
        // Logged before the JVM's shutdown begins, so java.util.logging's shutdown hook cannot have closed it away.
        assertTrue(Files.readString(stderr).contains("Received terminate signal, draining in-flight requests"),
                Files.readString(stderr));
    }

    @Test
    void aStopSignalWhileTheEngineWaitsForItsWorkersEndsItAtOnceWithZero(@TempDir Path dir) throws Exception {
        int nobodyListens;
        try (ServerSocket closed = new ServerSocket(0)) {
            nobodyListens = closed.getLocalPort();
        }
        Map<String, Object> config = Fixture.base(List.of("http://127.0.0.1:" + nobodyListens));
        config.put("worker_startup_timeout_secs", 600);
        Path stderr = dir.resolve("stderr.txt");
        Process p = spawn(ProcessBuilder.Redirect.to(stderr.toFile()));
        try {
            send(p, TestHttp.JSON.writeValueAsString(config));
            // Logged as the start begins, before it waits for the worker to answer.
            assertTrue(ResilienceTest.eventually(() -> contains(stderr, "Event loops: ")),
                    "the engine never began its start");
            p.destroy();
            // Before the fix the JVM's own handling took the signal here: exit 143.
            assertTrue(p.waitFor(10, TimeUnit.SECONDS), "the stop waited for the worker start-up timeout");
            assertEquals(0, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
        assertTrue(Files.readString(stderr).contains("Received terminate signal before the router listened; stopping"),
                Files.readString(stderr));
    }

    private static boolean contains(Path file, String text) {
        try {
            return Files.readString(file).contains(text);
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void aStopSignalTheEngineWasStartedWithIgnoredStaysIgnored() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // A shell without job control starts a background command so; `trap '' INT` does the same here.
        ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c", "trap '' INT; exec \"$0\" \"$@\"", java,
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
                EngineMain.class.getName());
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        try {
            send(p, TestHttp.JSON.writeValueAsString(Fixture.base(mock.urls())));
            JsonNode ready = firstLine(p);
            assertEquals("ready", ready.get("event").asText(), ready.toString());
            assertEquals(0, new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start().waitFor());
            // An idle engine that took the signal would have drained and exited well within this.
            assertFalse(p.waitFor(2, TimeUnit.SECONDS), "SIGINT stopped an engine started with SIGINT ignored");
            assertEquals(200, TestHttp.get(ready.get("url").asText() + "/health").statusCode());
            p.destroy();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void lifelineEofStopsTheEngine() throws Exception {
        PipedOutputStream stdin = new PipedOutputStream();
        PipedInputStream engineIn = new PipedInputStream(stdin);
        CapturedStdout stdout = new CapturedStdout();
        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> EngineRunner.serve(engineIn, true));
        try {
            stdin.write((TestHttp.JSON.writeValueAsString(Fixture.base(mock.urls())) + "\n").getBytes(StandardCharsets.UTF_8));
            stdin.flush();
            assertTrue(ResilienceTest.eventually(() -> !stdout.text().isEmpty()));
            JsonNode ready = TestHttp.JSON.readTree(stdout.text());
            assertEquals("ready", ready.get("event").asText());
            assertEquals(200, TestHttp.get(ready.get("url").asText() + "/health").statusCode());
            stdin.close();
            assertEquals(0, exit.get(30, TimeUnit.SECONDS));
        } finally {
            stdout.restore();
        }
    }

    @Test
    void theUpstreamReportPrintsTheLaunchersLinesWithAUrlAClientCanUse() throws Exception {
        PipedOutputStream stdin = new PipedOutputStream();
        PipedInputStream engineIn = new PipedInputStream(stdin);
        CapturedStdout stdout = new CapturedStdout();
        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(
                () -> EngineRunner.serve(engineIn, true, StartupReport.UPSTREAM_LAUNCHER));
        try {
            Map<String, Object> cfg = Fixture.base(mock.urls());
            cfg.put("host", "0.0.0.0");
            cfg.put("admin_api_key", "report-key");
            stdin.write((TestHttp.JSON.writeValueAsString(cfg) + "\n").getBytes(StandardCharsets.UTF_8));
            stdin.flush();
            assertTrue(ResilienceTest.eventually(() -> stdout.text().lines().count() == 2), stdout.text());
            List<String> lines = stdout.text().lines().toList();
            Matcher router = Pattern.compile("Router: (http://127\\.0\\.0\\.1:\\d+)").matcher(lines.get(0));
            assertTrue(router.matches(), lines.toString());
            assertEquals("Dashboard: " + router.group(1) + "/dashboard (asks for the admin API key)", lines.get(1));
            assertEquals(200, TestHttp.get(router.group(1) + "/health").statusCode());
            stdin.close();
            assertEquals(0, exit.get(30, TimeUnit.SECONDS));
        } finally {
            stdout.restore();
        }
    }

    @Test
    void theUpstreamReportOfAFailureIsTheLaunchersErrorLogLineAndExitOne() throws Exception {
        // java.util.logging's console handler takes System.err when it is made: make it now, before the swap.
        java.util.logging.Logger.getLogger("").getHandlers();
        CapturedStdout stdout = new CapturedStdout();
        CapturedStderr stderr = new CapturedStderr();
        int exit;
        try {
            exit = EngineRunner.serve(stream("{\"policy\":\"nope\",\"port\":0,\"prometheus_port\":0}"), false,
                    StartupReport.UPSTREAM_LAUNCHER);
        } finally {
            stderr.restore();
            stdout.restore();
        }
        assertEquals(1, exit);
        assertEquals("", stdout.text());
        assertTrue(stderr.text().matches("\\[Router \\(Python\\)] \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d,\\d{3}"
                + " - ERROR - Error starting router: .*nope.*"), stderr.text());
    }

    @Test
    void configErrorsAndBindFailuresPrintAnErrorLine() throws Exception {
        CapturedStdout stdout = new CapturedStdout();
        int invalid;
        try {
            invalid = EngineRunner.serve(stream("{\"policy\":\"nope\",\"port\":0,\"prometheus_port\":0}"), false);
        } finally {
            stdout.restore();
        }
        JsonNode error = TestHttp.JSON.readTree(stdout.text());
        assertEquals("error", error.get("event").asText());
        assertTrue(error.get("message").asText().contains("nope"), error.toString());
        assertNotEquals(0, invalid);

        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            Map<String, Object> cfg = Fixture.base(List.of());
            cfg.put("port", taken.getLocalPort());
            CapturedStdout clashOut = new CapturedStdout();
            int clash;
            try {
                clash = EngineRunner.serve(stream(TestHttp.JSON.writeValueAsString(cfg)), false);
            } finally {
                clashOut.restore();
            }
            JsonNode bindError = TestHttp.JSON.readTree(clashOut.text());
            assertEquals("error", bindError.get("event").asText());
            assertTrue(bindError.get("message").asText().contains(Integer.toString(taken.getLocalPort())));
            assertNotEquals(0, clash);
        }
    }

    @Test
    void logsAlsoGoToAFileInTheLogDirectoryInTheStderrFormat(@TempDir Path dir) throws Exception {
        Path logDir = dir.resolve("not/there/yet");
        Path stderr = dir.resolve("stderr.txt");
        Map<String, Object> cfg = Fixture.base(mock.urls());
        cfg.put("log_dir", logDir.toString());
        Process p = spawn(ProcessBuilder.Redirect.to(stderr.toFile()));
        try {
            send(p, TestHttp.JSON.writeValueAsString(cfg));
            JsonNode ready = firstLine(p);
            assertEquals("ready", ready.get("event").asText(), ready.toString());
            p.destroy();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
        List<String> logged = Files.readAllLines(logDir.resolve("vllm-router.0.log"));
        List<String> console = Files.readAllLines(stderr);
        assertTrue(logged.stream().anyMatch(l -> l.matches(
                "\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d INFO org\\.vllmrouter\\.server\\.RouterServer: Router ready .*")),
                logged.toString());
        assertTrue(console.containsAll(logged), "the file holds the lines stderr shows:\n" + logged + "\n" + console);
    }

    @Test
    void logLevelWarningKeepsWarningsAndLeavesTheInfoLinesOut(@TempDir Path dir) throws Exception {
        Path stderr = dir.resolve("stderr.txt");
        Map<String, Object> cfg = Fixture.base(mock.urls());
        cfg.put("log_level", "warning");
        cfg.put("log_dir", dir.resolve("logs").toString());
        // Outside PD mode the ZMQ discovery address is ignored with a warning at start-up.
        cfg.put("vllm_discovery_address", "127.0.0.1:1");
        Process p = spawn(ProcessBuilder.Redirect.to(stderr.toFile()));
        try {
            send(p, TestHttp.JSON.writeValueAsString(cfg));
            assertEquals("ready", firstLine(p).get("event").asText());
        } finally {
            p.destroy();
            p.waitFor(30, TimeUnit.SECONDS);
            p.destroyForcibly();
        }
        List<String> logged = Files.readAllLines(dir.resolve("logs").resolve("vllm-router.0.log"));
        assertTrue(logged.stream().anyMatch(l -> l.contains(" WARNING ") && l.contains("--vllm-discovery-address")),
                logged.toString());
        assertTrue(logged.stream().noneMatch(l -> l.contains(" INFO ")), logged.toString());
        assertTrue(Files.readAllLines(stderr).stream().noneMatch(l -> l.contains(" INFO ")));
    }

    @Test
    void aLogDirectoryThatCannotBeWrittenIsAOneLineStartUpError(@TempDir Path dir) throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("a-file"), "");
        Map<String, Object> cfg = Fixture.base(mock.urls());
        cfg.put("log_dir", notADirectory.resolve("logs").toString());
        CapturedStdout stdout = new CapturedStdout();
        int exit;
        try {
            exit = EngineRunner.serve(stream(TestHttp.JSON.writeValueAsString(cfg)), false);
        } finally {
            stdout.restore();
        }
        assertNotEquals(0, exit);
        assertEquals(1, stdout.text().lines().count(), stdout.text());
        JsonNode error = TestHttp.JSON.readTree(stdout.text());
        assertEquals("startup", error.get("kind").asText(), error.toString());
        assertEquals("Cannot write logs to --log-dir " + notADirectory.resolve("logs")
                + ": Not a directory", error.get("message").asText());
    }

    @Test
    void aFullCollectionFloorThatIsNotASizeIsAStartUpErrorBeforeTheConfigIsRead() throws Exception {
        Process p = spawn(ProcessBuilder.Redirect.DISCARD, "-Dvllm.router.fullCollectionFloor=lots");
        try {
            // No config comes: an engine that read on would report that instead.
            p.getOutputStream().close();
            JsonNode error = firstLine(p);
            assertEquals("error", error.get("event").asText(), error.toString());
            assertEquals("startup", error.get("kind").asText(), error.toString());
            assertEquals("-Dvllm.router.fullCollectionFloor=lots is not a heap size of at least 1 MiB (such as 20m)"
                    + " or off", error.get("message").asText());
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(2, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
    }

    /**
     * The engine collects its whole heap once more is in use than the floor (1 MiB here, so at once), and never with
     * the bound off; the JVM's own log of collections names the cause.
     */
    @Test
    void theEngineCollectsItsWholeHeapOverTheFullCollectionFloorUnlessItIsOff(@TempDir Path dir) throws Exception {
        Path on = dir.resolve("on.log");
        Path off = dir.resolve("off.log");
        Process bound = spawn(ProcessBuilder.Redirect.DISCARD, "-Dvllm.router.fullCollectionFloor=1m",
                "-Xlog:gc:file=" + on);
        Process unbound = spawn(ProcessBuilder.Redirect.DISCARD, "-Dvllm.router.fullCollectionFloor=off",
                "-Xlog:gc:file=" + off);
        try {
            for (Process p : List.of(bound, unbound)) {
                send(p, TestHttp.JSON.writeValueAsString(Fixture.base(mock.urls())));
                JsonNode ready = firstLine(p);
                assertEquals("ready", ready.get("event").asText(), ready.toString());
            }
            assertTrue(ResilienceTest.eventually(() -> text(on).contains("Pause Full (System.gc())")), text(on));
            // The bound checks once a second; two more seconds and the unbound engine has had two chances to collect.
            Thread.sleep(2_000);
            assertFalse(Files.readString(off).contains("System.gc()"), Files.readString(off));
        } finally {
            bound.destroyForcibly();
            unbound.destroyForcibly();
        }
    }

    private static String text(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static java.io.InputStream stream(String text) {
        return new java.io.ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Swaps System.out (or System.err) for a buffer while an in-process engine reports its start. */
    private static class CapturedStdout {
        private final PrintStream original;
        private final Consumer<PrintStream> install;
        private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();

        CapturedStdout() {
            this(System.out, System::setOut);
        }

        CapturedStdout(PrintStream original, Consumer<PrintStream> install) {
            this.original = original;
            this.install = install;
            install.accept(new PrintStream(buffer, true, StandardCharsets.UTF_8));
        }

        String text() {
            synchronized (buffer) {
                return buffer.toString(StandardCharsets.UTF_8).trim();
            }
        }

        void restore() {
            install.accept(original);
        }
    }

    private static final class CapturedStderr extends CapturedStdout {
        CapturedStderr() {
            super(System.err, System::setErr);
        }
    }
}
