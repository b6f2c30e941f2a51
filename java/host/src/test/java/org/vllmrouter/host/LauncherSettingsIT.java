package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The environment variables of the distribution's {@code bin/vllm-router}: the names the Python
 * package reads too, and the names of the previous release, which still work with a warning.
 */
class LauncherSettingsIT {

    private static final String SHOW_MARKER = "-XshowSettings:properties -Dvllm.router.marker=";

    private record Run(int exitCode, String stdout, String stderr) {}

    private static Run run(Map<String, String> environment, String... args) throws Exception {
        try (LauncherProcess launcher = LauncherProcess.dist(environment, args)) {
            String stdout = launcher.remainingStdout();
            return new Run(launcher.waitForExit(), stdout, launcher.stderr());
        }
    }

    private static long deprecationLines(String stderr, String oldName, String newName) {
        String line = "vllm-router: " + oldName + " is deprecated and will be removed in the next release; use " + newName;
        return stderr.lines().filter(line::equals).count();
    }

    @Test
    void vllmRouterJvmOptsReachTheJvm() throws Exception {
        Run version = run(Map.of("VLLM_ROUTER_JVM_OPTS", SHOW_MARKER + "new"), "--version");
        assertEquals(0, version.exitCode(), version.stderr());
        assertTrue(version.stderr().contains("vllm.router.marker = new"), version.stderr());
        assertFalse(version.stderr().contains("deprecated"), version.stderr());
    }

    @Test
    void theOldJavaOptsNameStillWorksWithOneWarningLine() throws Exception {
        Run version = run(Map.of("VLLM_ROUTER_JAVA_OPTS", SHOW_MARKER + "old"), "--version");
        assertEquals(0, version.exitCode(), version.stderr());
        assertTrue(version.stderr().contains("vllm.router.marker = old"), version.stderr());
        assertEquals(1, deprecationLines(version.stderr(), "VLLM_ROUTER_JAVA_OPTS", "VLLM_ROUTER_JVM_OPTS"),
                version.stderr());
    }

    @Test
    void theNewJvmOptsNameWinsOverTheOldOne() throws Exception {
        Run version = run(Map.of("VLLM_ROUTER_JAVA_OPTS", SHOW_MARKER + "old", "VLLM_ROUTER_JVM_OPTS", SHOW_MARKER + "new"),
                "--version");
        assertTrue(version.stderr().contains("vllm.router.marker = new"), version.stderr());
        assertFalse(version.stderr().contains("vllm.router.marker = old"), version.stderr());
        assertFalse(version.stderr().contains("deprecated"), version.stderr());
    }

    @Test
    void startupCacheSwitchUnderTheNewAndTheOldName(@TempDir Path dir) throws Exception {
        Path badConfig = Files.writeString(dir.resolve("router.json"), "{\"port\":0,\"cache_threshold\":1.5}");
        // A JVM that exits at once still writes its class-data archive when the caches are on.
        assertEquals(1, serveOnce(dir.resolve("on"), Map.of(), badConfig).archives().size());
        for (String off : List.of("off", "0")) {
            CacheRun newName = serveOnce(dir.resolve("new-" + off), Map.of("VLLM_ROUTER_STARTUP_CACHE", off), badConfig);
            assertEquals(List.of(), newName.archives());
            assertFalse(newName.stderr().contains("deprecated"), newName.stderr());
        }
        CacheRun oldName = serveOnce(dir.resolve("old"), Map.of("VLLM_ROUTER_CDS", "off"), badConfig);
        assertEquals(List.of(), oldName.archives());
        assertEquals(1, deprecationLines(oldName.stderr(), "VLLM_ROUTER_CDS", "VLLM_ROUTER_STARTUP_CACHE"),
                oldName.stderr());
    }

    /**
     * A JVM given two collectors does not start, so a user's choice of another collector replaces ours, and the
     * options chosen for ours go with it (the young generation size, the engine's whole-heap collections); a user's
     * own young generation size stays.
     */
    @Test
    void aCollectorOfTheUsersReplacesOursInTheCommandsThatSetOne(@TempDir Path dir) throws Exception {
        Path badConfig = Files.writeString(dir.resolve("router.json"), "{\"port\":0,\"cache_threshold\":1.5}");
        String flags = " -XX:+PrintCommandLineFlags -XshowSettings:properties";
        String floor = "vllm.router.fullCollectionFloor = 16m";

        Run ours = run(Map.of("VLLM_ROUTER_JVM_OPTS", flags), "serve", "--config", badConfig.toString());
        assertEquals(2, ours.exitCode(), ours.stderr());
        assertTrue(ours.stdout().contains("-XX:+UseSerialGC"), ours.stdout());
        assertTrue(ours.stdout().contains("-XX:NewSize=8388608"), ours.stdout());
        assertTrue(ours.stderr().contains(floor), ours.stderr());

        for (String collector : List.of("-XX:+UseParallelGC", "-XX:+UseG1GC")) {
            Run serve = run(Map.of("VLLM_ROUTER_JVM_OPTS", collector + flags), "serve", "--config", badConfig.toString());
            // The engine started and turned the config down, rather than the JVM refusing to start.
            assertEquals(2, serve.exitCode(), serve.stderr());
            assertTrue(serve.stdout().contains(collector), serve.stdout());
            assertFalse(serve.stdout().contains("-XX:+UseSerialGC"), serve.stdout());
            assertFalse(serve.stdout().contains("-XX:NewSize=8388608"), serve.stdout());
            assertFalse(serve.stderr().contains("vllm.router.fullCollectionFloor"), serve.stderr());
        }

        Run sized = run(Map.of("VLLM_ROUTER_JVM_OPTS", "-XX:+UseParallelGC -Xmn24m" + flags),
                "serve", "--config", badConfig.toString());
        assertEquals(2, sized.exitCode(), sized.stderr());
        assertTrue(sized.stdout().contains("-XX:NewSize=25165824"), sized.stdout());

        Run print = run(Map.of("VLLM_ROUTER_JVM_OPTS", "-XX:+UseParallelGC" + flags),
                "print-config", "--worker-urls", "http://w1:8000");
        assertEquals(0, print.exitCode(), print.stderr());
        assertTrue(print.stdout().contains("-XX:+UseParallelGC"), print.stdout());
        assertFalse(print.stdout().contains("-XX:+UseSerialGC"), print.stdout());
    }

    private record CacheRun(List<Path> archives, String stderr) {}

    /** One {@code serve} of a rejected config with a fresh cache directory, and the archives it left there. */
    private static CacheRun serveOnce(Path cacheDir, Map<String, String> settings, Path config) throws Exception {
        Files.createDirectories(cacheDir);
        Map<String, String> environment = new HashMap<>(settings);
        environment.put("VLLM_ROUTER_CDS_DIR", cacheDir.toString());
        Run serve = run(environment, "serve", "--config", config.toString());
        assertEquals(2, serve.exitCode(), serve.stderr());
        try (var files = Files.list(cacheDir)) {
            return new CacheRun(files.filter(f -> f.getFileName().toString().endsWith(".jsa")).toList(), serve.stderr());
        }
    }
}
