package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
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
 * {@code bin/vllm-router python SCRIPT} as a user runs it: a trainer script starts the engine in
 * the launcher's JVM and calls it directly; bad input ends as {@code python} ends (status and
 * first/last lines of stderr); and whatever way the program ends, the process exits and a router
 * it left running drains first (an in-flight request still gets its answer).
 */
class PythonCommandIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient CLIENT = HttpClient.newHttpClient();
    private static final long SLOW_REQUEST_MS = 3000;

    private static MockWorkers workers;

    @TempDir
    static Path dir;

    /** Shared by this class's runs: the first one records the class-data archive, the others use it. */
    @TempDir
    static Path launcherCache;

    /** Launches a router over the URLs in argv, prints its URL, then runs the rest of the script. */
    private static final String LAUNCH = """
            import sys
            from vllm_router import Router, RouterArgs
            router = Router.from_args(RouterArgs(port=0, prometheus_port=0, policy="sticky_least_loaded",
                                                 worker_urls=sys.argv[1:], log_level="warning")).launch()
            print(router.url, flush=True)
            """;

    @BeforeAll
    static void startWorkers() {
        workers = MockWorkers.start(MockConfig.builder().count(2).build());
    }

    @AfterAll
    static void stopWorkers() {
        if (workers != null) {
            workers.close();
        }
    }

    private static LauncherProcess python(Map<String, String> environment, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of("python"));
        command.addAll(List.of(args));
        Map<String, String> env = new java.util.HashMap<>(environment);
        env.put("VLLM_ROUTER_CDS_DIR", launcherCache.toString());
        return LauncherProcess.dist(env, command.toArray(String[]::new));
    }

    private static String[] withWorkerUrls(Path script) {
        List<String> args = new ArrayList<>(List.of(script.toString()));
        args.addAll(workers.urls());
        return args.toArray(String[]::new);
    }

    private static Path write(String name, String source) throws IOException {
        return Files.writeString(dir.resolve(name), source);
    }

    private static List<String> lines(String text) {
        return text.lines().toList();
    }

    private static String last(List<String> lines) {
        return lines.isEmpty() ? "" : lines.get(lines.size() - 1);
    }

    @Test
    void aTrainerScriptRoutesAndReleasesSessionsThroughTheEngineInItsOwnJvm() throws Exception {
        Path libraries = Files.createDirectories(dir.resolve("from-pythonpath"));
        Files.writeString(libraries.resolve("rewards.py"), "def reward(text):\n    return len(text)\n");
        Path extra = Files.createDirectories(dir.resolve("from-option"));
        Files.writeString(extra.resolve("rollouts.py"), "SESSIONS = ['traj-a', 'traj-b', 'traj-c']\n");
        Path script = write("trainer.py", LAUNCH + """
                import json, urllib.request
                from rewards import reward
                from rollouts import SESSIONS

                def turn(session):
                    request = urllib.request.Request(router.url + "/v1/chat/completions", method="POST",
                        data=json.dumps({"model": "mock", "messages": [{"role": "user", "content": "hi"}]}).encode(),
                        headers={"Content-Type": "application/json", "X-Session-ID": session})
                    with urllib.request.urlopen(request, timeout=60) as response:
                        return response.headers["X-Worker-Id"]

                with router:
                    workers = {s: {turn(s) for _ in range(3)} for s in SESSIONS}
                    active = router.session_stats()["active_sessions"]
                    router.finish_session("traj-a")
                    print(json.dumps({
                        "engine": type(router._engine).__module__,
                        "workers_per_session": {s: len(w) for s, w in workers.items()},
                        "active": active,
                        "after_finish": sum(router.sessions().values()),
                        "reward": reward(sys.stdin.readline().strip()),
                    }))
                """);
        try (LauncherProcess run = python(Map.of("PYTHONPATH", libraries.toString()),
                "--python-path", extra.toString(), script.toString(), workers.urls().get(0), workers.urls().get(1))) {
            String url = run.readLine();
            assertTrue(String.valueOf(url).startsWith("http://"), () -> url + "\n" + run.stderr());
            run.writeLine("twelve chars");
            JsonNode result = JSON.readTree(String.valueOf(run.readLine()));
            assertEquals(0, run.waitForExit(), run.stderr());
            assertEquals("vllm_router.bridge.graal", result.get("engine").asText(), result.toString());
            assertEquals(JSON.readTree("{\"traj-a\":1,\"traj-b\":1,\"traj-c\":1}"), result.get("workers_per_session"));
            assertEquals(3, result.get("active").asInt());
            assertEquals(2, result.get("after_finish").asInt());
            assertEquals(12, result.get("reward").asInt());
        }
    }

    /**
     * The start-up caches only make the command start sooner: an AOT cache that does not fit (here cut short, as a
     * copy interrupted or another JDK's) and a class-data archive directory that cannot be created change nothing
     * the program sees.
     */
    @Test
    void startUpCachesThatDoNotFitOrCannotBeWrittenChangeNothingTheProgramSees() throws Exception {
        Path home = Files.createDirectories(dir.resolve("dist-with-stale-caches"));
        Path built = LauncherProcess.distribution();
        Files.createSymbolicLink(home.resolve("lib"), built.resolve("lib"));
        for (String copied : List.of("bin", "conf", "python")) {
            copyTree(built.resolve(copied), home.resolve(copied));
        }
        Path aot = Files.createDirectories(home.resolve("aot"));
        try (var caches = Files.list(built.resolve("aot"))) {
            for (Path cache : caches.filter(f -> f.getFileName().toString().startsWith("python-java")).toList()) {
                try (var in = Files.newInputStream(cache)) {
                    Files.write(aot.resolve(cache.getFileName()), in.readNBytes(1 << 20));
                }
            }
        }
        // A path below a regular file: no directory can be made there, whoever runs the test.
        Path notADirectory = Files.writeString(dir.resolve("a-file"), "");
        try (LauncherProcess run = LauncherProcess.dist(home, Map.of("VLLM_ROUTER_CDS_DIR",
                notADirectory.resolve("cache").toString()), "python", "-c", "import sys; print('ran', sys.argv)")) {
            assertEquals(0, run.waitForExit(), run::stderr);
            assertEquals("ran ['-c']\n", run.remainingStdout());
            assertEquals("", run.stderr());
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (var paths = Files.walk(from)) {
            for (Path path : paths.toList()) {
                Path target = to.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(path, target, java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
    }

    @Test
    void aMissingScriptExitsTwoWithPythonsMessage() throws Exception {
        Path missing = dir.resolve("no_such_trainer.py");
        try (LauncherProcess run = python(Map.of(), missing.toString())) {
            assertEquals(2, run.waitForExit());
            Path launcher = Path.of(System.getProperty("vllmrouter.dist"), "bin", "vllm-router");
            assertEquals(launcher + ": can't open file '" + missing + "': [Errno 2] No such file or directory\n",
                    run.stderr());
        }
    }

    @Test
    void aSyntaxErrorExitsOneWithItsLocationAndMessage() throws Exception {
        Path script = write("syntax_error.py", "def train(:\n    pass\n");
        try (LauncherProcess run = python(Map.of(), script.toString())) {
            assertEquals(1, run.waitForExit());
            List<String> stderr = lines(run.stderr());
            assertEquals("  File \"" + script + "\", line 1", stderr.get(0), run.stderr());
            assertTrue(last(stderr).startsWith("SyntaxError: "), run.stderr());
        }
    }

    @Test
    void anExceptionAtImportExitsOneWithItsTracebackAfterDrainingTheRouterItLeftRunning() throws Exception {
        write("broken_rewards.py", "raise RuntimeError('reward model missing')\n");
        Path script = write("import_fails.py", LAUNCH + """
                sys.stdin.readline()
                import broken_rewards
                """);
        try (LauncherProcess run = python(Map.of(), withWorkerUrls(script))) {
            String url = run.readLine();
            CompletableFuture<HttpResponse<String>> inFlight = slowRequestInFlight(url);
            run.writeLine("go");
            assertEquals(200, inFlight.get(60, TimeUnit.SECONDS).statusCode(), "the in-flight request was cut");
            assertEquals(1, run.waitForExit());
            List<String> stderr = lines(run.stderr());
            assertEquals("Traceback (most recent call last):", stderr.get(0), run.stderr());
            assertTrue(run.stderr().contains("    import broken_rewards\n"), run.stderr());
            assertTrue(run.stderr().contains("broken_rewards.py\", line 1, in <module>\n"), run.stderr());
            assertEquals("RuntimeError: reward model missing", last(stderr), run.stderr());
        } finally {
            workers.workers().forEach(w -> w.knobs().latencyMs(0));
        }
    }

    @Test
    void sysExitThreeExitsThreeWithTheRouterStillRunning() throws Exception {
        Path script = write("exit_three.py", LAUNCH + "sys.exit(3)\n");
        try (LauncherProcess run = python(Map.of(), withWorkerUrls(script))) {
            assertTrue(String.valueOf(run.readLine()).startsWith("http://"), run::stderr);
            assertEquals(3, run.waitForExit(), run.stderr());
            assertEquals("", run.stderr());
        }
    }

    @Test
    void ctrlCRaisesKeyboardInterruptTheHandleDrainsAndTheStatusIs130() throws Exception {
        Path script = write("interrupted.py", LAUNCH + """
                import time
                with router:
                    time.sleep(600)
                """);
        try (LauncherProcess run = python(Map.of(), withWorkerUrls(script))) {
            String url = run.readLine();
            CompletableFuture<HttpResponse<String>> inFlight = slowRequestInFlight(url);
            run.signal("INT");
            assertEquals(200, inFlight.get(60, TimeUnit.SECONDS).statusCode(), "the in-flight request was cut");
            assertEquals(130, run.waitForExit(), run.stderr());
            List<String> stderr = lines(run.stderr());
            assertTrue(stderr.contains("Traceback (most recent call last):"), run.stderr());
            assertEquals("KeyboardInterrupt", last(stderr), run.stderr());
        } finally {
            workers.workers().forEach(w -> w.knobs().latencyMs(0));
        }
    }

    @Test
    void sigtermEndsTheProgramAtOnceButTheRouterItStartedDrainsFirst() throws Exception {
        Path script = write("terminated.py", LAUNCH + """
                import time
                try:
                    time.sleep(600)
                finally:
                    print("finally ran", flush=True)
                """);
        try (LauncherProcess run = python(Map.of(), withWorkerUrls(script))) {
            String url = run.readLine();
            CompletableFuture<HttpResponse<String>> inFlight = slowRequestInFlight(url);
            run.signal("TERM");
            assertEquals(200, inFlight.get(60, TimeUnit.SECONDS).statusCode(), "the in-flight request was cut");
            // As CPython's default SIGTERM action: no Python clean-up runs, the status is 128 + 15.
            assertEquals(143, run.waitForExit(), run.stderr());
            assertEquals("", run.remainingStdout());
        } finally {
            workers.workers().forEach(w -> w.knobs().latencyMs(0));
        }
    }

    @Test
    void sigtermStopsABlockingLaunchRouterWhichReturns() throws Exception {
        Path script = write("blocking.py", """
                import sys
                from vllm_router.launch_router import launch_router
                from vllm_router.router_args import RouterArgs
                launch_router(RouterArgs(port=int(sys.argv[1]), prometheus_port=0, worker_urls=sys.argv[2:]))
                print("launch_router returned", flush=True)
                """);
        int port;
        try (var socket = new java.net.ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        List<String> args = new ArrayList<>(List.of(script.toString(), Integer.toString(port)));
        args.addAll(workers.urls());
        try (LauncherProcess run = python(Map.of(), args.toArray(String[]::new))) {
            String url = "http://127.0.0.1:" + port;
            awaitHealthy(url, run);
            // /health answers a moment before launch_router has seen the engine ready; a signal in between
            // abandons the start-up instead (and prints no URLs). The URL line says it is ready.
            assertEquals("Router: " + url, run.readLine());
            run.signal("TERM");
            assertEquals(0, run.waitForExit(), run.stderr());
            // The dashboard's URL follows the router's; launch_router's return is the last line.
            String stdout = run.remainingStdout();
            assertTrue(stdout.startsWith("Dashboard: ") && stdout.endsWith("\nlaunch_router returned\n"), stdout);
        }
    }

    /** A chat request that the workers hold for {@link #SLOW_REQUEST_MS}, once a worker has it. */
    private static CompletableFuture<HttpResponse<String>> slowRequestInFlight(String url) throws InterruptedException {
        workers.workers().forEach(w -> w.knobs().latencyMs(SLOW_REQUEST_MS));
        CompletableFuture<HttpResponse<String>> response = CLIENT.sendAsync(
                HttpRequest.newBuilder(URI.create(url + "/v1/chat/completions"))
                        .timeout(Duration.ofSeconds(60))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"model\":\"mock\",\"messages\":[{\"role\":\"user\",\"content\":\"slow\"}]}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (workers.workers().stream().allMatch(w -> w.inFlight() == 0)) {
            assertTrue(System.nanoTime() < deadline, "the request never reached a worker");
            Thread.sleep(10);
        }
        return response;
    }

    private static void awaitHealthy(String url, LauncherProcess run) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LauncherProcess.START_TIMEOUT_SECONDS);
        while (System.nanoTime() < deadline) {
            assertTrue(run.handle().isAlive(), () -> "the launcher ended before the router was healthy:\n" + run.stderr());
            try {
                if (RouterHttp.get(url + "/health").statusCode() == 200) {
                    return;
                }
            } catch (IOException notYet) {
                // Not listening yet.
            }
            Thread.sleep(50);
        }
        throw new AssertionError("router at " + url + " never healthy");
    }
}
