package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The packaged launcher end to end: the distribution's {@code bin/vllm-router} (GraalPy inside)
 * and the engine jar the Python wheel carries (no GraalPy), against mock workers.
 */
class LauncherIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static MockWorkers workers;

    /**
     * The script's class-data archives and parse cache for this class's launches: never the
     * user's home, whose entries would outlive the run and could answer a later run's parse.
     */
    @TempDir
    static Path launcherCache;

    @BeforeAll
    static void startWorkers() {
        workers = MockWorkers.start(MockConfig.builder().count(3).build());
    }

    @AfterAll
    static void stopWorkers() {
        if (workers != null) {
            workers.close();
        }
    }

    private static LauncherProcess dist(String... args) throws Exception {
        return LauncherProcess.dist(Map.of("VLLM_ROUTER_CDS_DIR", launcherCache.toString()), args);
    }

    private static List<String> launchArgs(String... extra) {
        List<String> args = new ArrayList<>(List.of("launch", "--worker-urls"));
        args.addAll(workers.urls());
        args.addAll(List.of("--policy", "sticky_least_loaded", "--port", "0", "--prometheus-port", "0"));
        args.addAll(List.of(extra));
        return args;
    }

    @Test
    void launchServesStickySessionsAndStopsCleanlyOnSigterm() throws Exception {
        try (LauncherProcess router = dist(launchArgs().toArray(String[]::new))) {
            String readyLine = router.readLine();
            JsonNode ready = JSON.readTree(String.valueOf(readyLine));
            assertEquals("ready", ready.path("event").asText(), () -> readyLine + "\n" + router.stderr());
            String url = ready.get("url").asText();

            assertEquals(200, RouterHttp.get(url + "/health").statusCode());
            Set<String> workersUsed = new HashSet<>();
            for (int session = 0; session < 3; session++) {
                String first = RouterHttp.chatTurn(url, "session-" + session);
                for (int turn = 1; turn < 4; turn++) {
                    assertEquals(first, RouterHttp.chatTurn(url, "session-" + session),
                            "turn " + turn + " of session-" + session + " left its worker");
                }
                workersUsed.add(first);
            }
            // sticky_least_loaded: three concurrent sessions over three idle workers take one each.
            assertEquals(3, workersUsed.size(), workersUsed.toString());

            JsonNode sessions = JSON.readTree(RouterHttp.get(url + "/sessions").body());
            assertEquals(3, sessions.get("active_sessions").asInt(), sessions.toString());
            assertEquals(200, RouterHttp.post(url + "/finish_session?session_id=session-0").statusCode());
            sessions = JSON.readTree(RouterHttp.get(url + "/sessions").body());
            assertEquals(2, sessions.get("active_sessions").asInt(), sessions.toString());

            assertEquals(0, router.terminate(), router.stderr());
        }
    }

    @Test
    void launchWithABadChoiceExitsTwoWithArgparsesMessage() throws Exception {
        try (LauncherProcess bad = dist("launch", "--policy", "least_loaded")) {
            assertEquals("", bad.remainingStdout());
            assertEquals(2, bad.waitForExit());
            String stderr = bad.stderr();
            assertTrue(stderr.startsWith("usage: vllm-router"), stderr);
            assertTrue(stderr.contains("vllm-router: error: argument --policy: invalid choice: 'least_loaded'"), stderr);
        }
    }

    @Test
    void launchHelpIsArgparsesHelpOnStdoutWithExitZero() throws Exception {
        try (LauncherProcess help = dist("launch", "--help")) {
            String stdout = help.remainingStdout();
            assertEquals(0, help.waitForExit(), help.stderr());
            assertTrue(stdout.startsWith("usage: vllm-router"), stdout);
            assertTrue(stdout.contains("--policy {random,round_robin,cache_aware"), stdout);
        }
    }

    @Test
    void sigtermWhileTheFlagsAreParsedEndsTheParserJvmToo() throws Exception {
        // Another test launches with the same flags; a cached parse would start no parser at all.
        Map<String, String> env = Map.of("VLLM_ROUTER_CDS_DIR", launcherCache.toString(),
                "VLLM_ROUTER_PARSE_CACHE", "off");
        try (LauncherProcess router = LauncherProcess.dist(env, launchArgs().toArray(String[]::new))) {
            ProcessHandle parser = awaitDescendant(router.handle(), "ArgvParserMain");
            router.terminate();
            parser.onExit().get(30, TimeUnit.SECONDS);
            assertFalse(parser.isAlive(), "the parser JVM outlived the launcher");
        }
    }

    @Test
    void aRestartWithTheSameFlagsSkipsTheParseAndUsageErrorsAreNeverCached(@TempDir Path cacheDir) throws Exception {
        Map<String, String> env = Map.of("VLLM_ROUTER_CDS_DIR", cacheDir.toString());
        String[] args = launchArgs().toArray(String[]::new);
        try (LauncherProcess first = LauncherProcess.dist(env, args)) {
            assertReady(first);
            assertEquals(0, first.terminate(), first.stderr());
        }
        List<Path> entries = parsedEntries(cacheDir);
        assertEquals(1, entries.size(), entries.toString());
        assertTrue(Files.readString(entries.get(0)).contains(workers.urls().get(0)));

        try (LauncherProcess again = LauncherProcess.dist(env, args)) {
            Set<String> parsers = ConcurrentHashMap.newKeySet();
            Thread watcher = Thread.ofPlatform().daemon().start(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    again.handle().descendants().map(LauncherIT::commandLine)
                            .filter(c -> c.contains("ArgvParserMain")).forEach(parsers::add);
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            String url = assertReady(again);
            watcher.interrupt();
            assertEquals(Set.of(), parsers, "the second launch with the same flags ran the parser");
            assertEquals(200, RouterHttp.get(url + "/health").statusCode());
            assertEquals(0, again.terminate(), again.stderr());
        }

        for (int attempt = 0; attempt < 2; attempt++) {
            try (LauncherProcess bad = LauncherProcess.dist(env, "launch", "--policy", "least_loaded")) {
                assertEquals(2, bad.waitForExit());
                assertTrue(bad.stderr().contains("invalid choice: 'least_loaded'"), bad.stderr());
            }
        }
        assertEquals(1, parsedEntries(cacheDir).size());
    }

    private static String assertReady(LauncherProcess router) throws Exception {
        String readyLine = router.readLine();
        JsonNode ready = JSON.readTree(String.valueOf(readyLine));
        assertEquals("ready", ready.path("event").asText(), () -> readyLine + "\n" + router.stderr());
        return ready.get("url").asText();
    }

    private static List<Path> parsedEntries(Path dir) throws Exception {
        try (var files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().startsWith("parsed-")).toList();
        }
    }

    /** The launcher's child process whose command line mentions {@code mainClass}, once it exists. */
    private static ProcessHandle awaitDescendant(ProcessHandle launcher, String mainClass) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LauncherProcess.START_TIMEOUT_SECONDS);
        while (System.nanoTime() < deadline) {
            Optional<ProcessHandle> found = launcher.descendants()
                    .filter(p -> commandLine(p).contains(mainClass))
                    .findFirst();
            if (found.isPresent()) {
                return found.get();
            }
            assertTrue(launcher.isAlive(), "the launcher ended before starting its parser");
            Thread.sleep(20);
        }
        throw new AssertionError("no " + mainClass + " process under the launcher");
    }

    /**
     * A process's whole command line. {@code ProcessHandle.Info} reads only its first 4 KiB, and
     * the parser JVM's class path alone nearly fills that: under a longer checkout path the main
     * class falls past the cut.
     */
    private static String commandLine(ProcessHandle process) {
        try {
            byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(process.pid()), "cmdline"));
            return new String(raw, StandardCharsets.UTF_8).replace('\0', ' ');
        } catch (IOException e) {
            return "";
        }
    }

    @Test
    void engineJarServesAConfigFileWithoutGraalPy() throws Exception {
        String config = JSON.writeValueAsString(JSON.createObjectNode()
                .<com.fasterxml.jackson.databind.node.ObjectNode>set("worker_urls", JSON.valueToTree(workers.urls()))
                .put("policy", "round_robin").put("port", 0).put("prometheus_port", 0));
        Path file = LauncherProcess.writeTempFile("router", config);
        try (LauncherProcess router = LauncherProcess.engineJar("serve", "--config", file.toString())) {
            String readyLine = router.readLine();
            JsonNode ready = JSON.readTree(String.valueOf(readyLine));
            assertEquals("ready", ready.path("event").asText(), () -> readyLine + "\n" + router.stderr());
            String url = ready.get("url").asText();
            assertNotEquals(RouterHttp.chatTurn(url, "a"), RouterHttp.chatTurn(url, "a"), "round_robin alternates");
            assertEquals(0, router.terminate(), router.stderr());
            assertTrue(Files.exists(file));
        }
    }

    @Test
    void engineJarRefusesLaunchWithAClearMessage() throws Exception {
        try (LauncherProcess launch = LauncherProcess.engineJar("launch", "--worker-urls", "http://w:8000")) {
            assertEquals(1, launch.waitForExit());
            assertTrue(launch.stderr().contains("this build has no GraalPy"), launch.stderr());
        }
    }

    @Test
    void serveWithAMissingConfigFileExitsOne() throws Exception {
        try (LauncherProcess serve = LauncherProcess.engineJar("serve", "--config", "/nonexistent/router.json")) {
            assertEquals(1, serve.waitForExit());
            assertTrue(serve.stderr().contains("cannot read the configuration file /nonexistent/router.json"),
                    serve.stderr());
        }
    }
}
