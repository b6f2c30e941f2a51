package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.vllmrouter.core.config.RouterConfig;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The launcher's commands in this JVM (exit codes as {@link Main#execute} returns them, output
 * captured); the packaged script and real processes are covered by {@code LauncherIT}.
 */
class MainTest {

    record Run(int exitCode, String stdout, String stderr) {}

    private static synchronized Run run(String... args) {
        PrintStream originalOut = System.out;
        PrintStream originalErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int exitCode = Main.execute(args);
            return new Run(exitCode, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(originalOut);
            System.setErr(originalErr);
        }
    }

    @Test
    void helpOfPrintConfigIsArgparsesHelpWithExitZero() {
        Run help = run("print-config", "--help");
        assertEquals(0, help.exitCode(), help.stderr());
        assertTrue(help.stdout().startsWith("usage: vllm-router"), help.stdout());
        assertTrue(help.stdout().contains("--policy {random,round_robin,cache_aware"), help.stdout());
        assertTrue(help.stdout().contains("(default: cache_aware)"), help.stdout());
    }

    @Test
    void anArgparseErrorExitsTwoWithUsageAndMessage() {
        Run bad = run("print-config", "--port", "http");
        assertEquals(2, bad.exitCode());
        assertEquals("", bad.stdout());
        assertTrue(bad.stderr().startsWith("usage: vllm-router"), bad.stderr());
        assertTrue(bad.stderr().endsWith("vllm-router: error: argument --port: invalid int value: 'http'\n"), bad.stderr());
    }

    @Test
    void aBadBootstrapPortExitsOneWithPythonsMessage() {
        Run bad = run("launch", "--vllm-pd-disaggregation", "--prefill", "http://p:8000", "abc", "--decode", "http://d:8001");
        assertEquals(1, bad.exitCode());
        assertEquals("vllm-router: error: Invalid bootstrap port: abc. Must be a number or 'none'\n", bad.stderr());
    }

    @Test
    void printConfigPrintsTheNormalisedConfiguration() throws Exception {
        Run print = run("print-config", "--policy", "sticky_least_loaded", "--worker-urls", "http://w1:8000",
                "http://w2:8000", "--selector", "app=w", "--cache-threshold", "0.5");
        assertEquals(0, print.exitCode(), print.stderr());
        RouterConfig config = RouterConfig.fromJson(print.stdout());
        assertEquals(print.stdout().strip(), config.toJson());
        assertEquals(List.of("http://w1:8000", "http://w2:8000"), config.workerUrls());
        assertEquals("sticky_least_loaded", config.policy());
        assertEquals(0.5, config.cacheThreshold());
        assertEquals("info", config.logLevel());
    }

    @Test
    void argumentsAfterTheSubcommandAllReachArgparse() {
        // `--` and `@file` mean something to Picocli; after `print-config` they are argparse's.
        Run print = run("print-config", "--worker-urls", "@workers.txt");
        assertEquals(0, print.exitCode(), print.stderr());
        assertTrue(print.stdout().contains("\"worker_urls\":[\"@workers.txt\"]"), print.stdout());
    }

    @Test
    void theLauncherWithoutASubcommandExitsTwo() {
        Run none = run();
        assertEquals(2, none.exitCode());
        assertTrue(none.stderr().contains("Missing subcommand"), none.stderr());
        assertTrue(none.stderr().contains("launch"), none.stderr());
    }

    @Test
    void serveNeedsAConfig() {
        Run serve = run("serve");
        assertEquals(2, serve.exitCode());
        assertTrue(serve.stderr().contains("Missing required option: '--config=FILE|-'"), serve.stderr());
    }

    @Test
    void serveMarksARejectedConfigurationAsAConfigError(@TempDir Path dir) throws Exception {
        Path config = Files.writeString(dir.resolve("router.json"), "{\"port\":0,\"cache_threshold\":1.5}");
        Run serve = run("serve", "--config", config.toString());
        assertEquals(2, serve.exitCode(), serve.stderr());
        JsonNode error = new ObjectMapper().readTree(serve.stdout());
        assertEquals("error", error.path("event").asText(), serve.stdout());
        assertEquals("config", error.path("kind").asText(), serve.stdout());
        assertTrue(error.path("message").asText().startsWith("Configuration validation failed"), serve.stdout());
    }

    @Test
    void serveMarksAPortInUseAsAStartupError(@TempDir Path dir) throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Path config = Files.writeString(dir.resolve("router.json"),
                    "{\"host\":\"127.0.0.1\",\"port\":" + taken.getLocalPort() + ",\"prometheus_port\":0}");
            Run serve = run("serve", "--config", config.toString());
            assertEquals(1, serve.exitCode(), serve.stderr());
            JsonNode error = new ObjectMapper().readTree(serve.stdout());
            assertEquals("error", error.path("event").asText(), serve.stdout());
            assertEquals("startup", error.path("kind").asText(), serve.stdout());
            assertTrue(error.path("message").asText().contains(Integer.toString(taken.getLocalPort())), serve.stdout());
        }
    }

    @Test
    void serveWithTheUpstreamReportFailsAsUpstreamsLauncherDoes(@TempDir Path dir) throws Exception {
        Path config = Files.writeString(dir.resolve("router.json"), "{\"port\":0,\"cache_threshold\":1.5}");
        Run serve = run("serve", "--config", config.toString(), "--report", "upstream");
        assertEquals(1, serve.exitCode(), serve.stderr());
        assertEquals("", serve.stdout());
        assertTrue(serve.stderr().matches("(?s)\\[Router \\(Python\\)] [-0-9]+ [:,0-9]+ - ERROR - "
                + "Error starting router: Configuration validation failed.*"), serve.stderr());
    }

    @Test
    void serveRefusesAnUnknownReportBeforeReadingItsConfiguration() {
        Run serve = run("serve", "--config", "/no/such/router.json", "--report", "yaml");
        assertEquals(2, serve.exitCode());
        assertTrue(serve.stderr().contains("Invalid value for option '--report'"), serve.stderr());
        assertTrue(serve.stderr().contains("json, upstream"), serve.stderr());
        assertEquals("", serve.stdout());
    }
}
