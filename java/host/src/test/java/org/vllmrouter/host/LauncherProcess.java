package org.vllmrouter.host;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A launcher run as a user runs it: the distribution's {@code bin/vllm-router}, or
 * {@code java -jar vllm-router-engine.jar}, in a child process whose output the test reads.
 */
final class LauncherProcess implements AutoCloseable {

    /** Generous: GraalPy's cold start on a shared 2-core machine under load takes tens of seconds. */
    static final long START_TIMEOUT_SECONDS = 300;

    private final Process process;
    private final BufferedReader stdout;
    private final CompletableFuture<String> stderr;

    private LauncherProcess(List<String> command, Map<String, String> environment) throws IOException {
        ProcessBuilder builder = new ProcessBuilder(command);
        // Only the test's own settings: the distribution's script must find a JDK >= 21 itself,
        // whatever JAVA_HOME says, and a developer's VLLM_ROUTER_JVM_OPTS must not reach the run.
        builder.environment().keySet().removeIf(name -> name.startsWith("VLLM_ROUTER_"));
        builder.environment().putAll(environment);
        this.process = builder.start();
        this.stdout = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.stderr = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(stderr unreadable: " + e + ")";
            }
        });
    }

    static LauncherProcess dist(Map<String, String> environment, String... args) throws IOException {
        return dist(distribution(), environment, args);
    }

    /** The launcher of the distribution at {@code home} (a test's own copy of {@link #distribution}). */
    static LauncherProcess dist(Path home, Map<String, String> environment, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(home.resolve("bin").resolve("vllm-router").toString());
        command.addAll(List.of(args));
        return new LauncherProcess(command, environment);
    }

    /** The distribution the build assembled. */
    static Path distribution() {
        return Path.of(System.getProperty("vllmrouter.dist"));
    }

    static LauncherProcess engineJar(String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-jar");
        command.add(System.getProperty("vllmrouter.engineJar"));
        command.addAll(List.of(args));
        return new LauncherProcess(command, Map.of());
    }

    /** The next line on stdout (the engine's ready/error line), or null at EOF. */
    String readLine() throws IOException {
        return stdout.readLine();
    }

    /** Everything left on stdout; waits for the process to close it. */
    String remainingStdout() throws IOException {
        StringBuilder text = new StringBuilder();
        for (String line; (line = stdout.readLine()) != null; ) {
            text.append(line).append('\n');
        }
        return text.toString();
    }

    int waitForExit() throws InterruptedException {
        if (!process.waitFor(START_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException("launcher did not exit within " + START_TIMEOUT_SECONDS + " s");
        }
        return process.exitValue();
    }

    /** Writes a line to the process's stdin, and flushes it. */
    void writeLine(String line) throws IOException {
        process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
        process.getOutputStream().flush();
    }

    /**
     * Sends a signal ({@code INT} as Ctrl-C in a terminal, {@code TERM}) and leaves the pipes
     * open, unlike {@link Process#destroy}, which closes them: the process can still print.
     */
    void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IOException("kill -" + name + " " + process.pid() + " failed");
        }
    }

    /** SIGTERM, as an operator stops the router; returns the exit status. */
    int terminate() throws InterruptedException {
        process.destroy();
        return waitForExit();
    }

    /** The launcher's own process (after the script's exec: the engine's JVM). */
    ProcessHandle handle() {
        return process.toHandle();
    }

    /**
     * Everything the process wrote to stderr. Waits (up to 30 s) for the stream to close, which a running process
     * never does: as the message of an assertion on a live process, pass it lazily ({@code () -> p.stderr()}).
     */
    String stderr() {
        try {
            return stderr.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            return "(stderr not available: " + e + ")";
        }
    }

    static Path writeTempFile(String prefix, String content) throws IOException {
        Path file = Files.createTempFile(prefix, ".json");
        Files.writeString(file, content);
        file.toFile().deleteOnExit();
        return file;
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
        }
    }
}
