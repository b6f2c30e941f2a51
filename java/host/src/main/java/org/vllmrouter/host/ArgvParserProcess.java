package org.vllmrouter.host;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@link ArgvParserMain} in a child JVM, started by {@code launch} before anything else.
 *
 * <p>Why a second JVM: the parse is a short interpreted GraalPy run that is fastest on a C1-only
 * JIT with a class-data archive of its own, while the engine wants the full JIT and no GraalPy in
 * its heap.
 *
 * <p>The child runs the same Java and class path as this JVM. Its JVM options come from
 * {@value #OPTIONS_ENV} (the distribution's launcher script sets it, with the archive to use), or
 * default to the script's options for a short run, without an archive. What it writes to stderr
 * is copied to {@link System#err} as it comes, so argparse's messages reach the user unchanged;
 * its stdout is captured: the configuration JSON, or the text of {@code --help}.
 */
final class ArgvParserProcess {
    static final String OPTIONS_ENV = "VLLM_ROUTER_PARSER_JVM_OPTS";

    /** The child's exit status, everything it printed on stdout, and whether it printed anything on stderr. */
    record Outcome(int exitCode, byte[] stdout, boolean wroteStderr) {}

    private final Process process;
    private final Thread stderrCopier;
    private volatile long stderrBytes;
    private final Thread destroyOnExit;

    private ArgvParserProcess(Process process) {
        this.process = process;
        PrintStream err = System.err;
        this.stderrCopier = Thread.ofPlatform().daemon().name("vllm-router-parser-stderr").start(() -> {
            byte[] buffer = new byte[8192];
            try (InputStream in = process.getErrorStream()) {
                for (int n; (n = in.read(buffer)) >= 0; ) {
                    stderrBytes += n;
                    err.write(buffer, 0, n);
                    err.flush();
                }
            } catch (IOException ignored) {
                // The child ended or was destroyed; what it wrote so far has been copied.
            }
        });
        // A SIGTERM to the launcher during the parse must not leave the child running.
        this.destroyOnExit = new Thread(process::destroyForcibly, "vllm-router-parser-reaper");
        Runtime.getRuntime().addShutdownHook(destroyOnExit);
    }

    static ArgvParserProcess start(List<String> routerArgs) {
        List<String> command = new ArrayList<>();
        command.add(HostJvm.javaExecutable());
        command.addAll(jvmOptions());
        command.add("-cp");
        command.add(HostJvm.classPath());
        command.add(ArgvParserMain.class.getName());
        command.addAll(routerArgs);
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectInput(ProcessBuilder.Redirect.PIPE)
                .redirectOutput(ProcessBuilder.Redirect.PIPE)
                .redirectError(ProcessBuilder.Redirect.PIPE);
        builder.environment().remove(OPTIONS_ENV);
        try {
            Process process = builder.start();
            process.getOutputStream().close();
            return new ArgvParserProcess(process);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start the flag parser JVM: " + e.getMessage(), e);
        }
    }

    private static List<String> jvmOptions() {
        String fromLauncher = System.getenv(OPTIONS_ENV);
        if (fromLauncher != null && !fromLauncher.isBlank()) {
            return Arrays.asList(fromLauncher.trim().split("\\s+"));
        }
        // As the launcher script's options for a short GraalPy run: C1 only, no collection during the parse.
        List<String> options = new ArrayList<>(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmn256m",
                "-XX:ReservedCodeCacheSize=240m", "--enable-native-access=ALL-UNNAMED"));
        if (Runtime.version().feature() >= 23) {
            options.add("--sun-misc-unsafe-memory-access=allow");
        }
        return options;
    }

    /** Waits for the child to end and returns what it printed. */
    Outcome await() {
        try {
            byte[] stdout = process.getInputStream().readAllBytes();
            int exitCode = process.waitFor();
            stderrCopier.join();
            return new Outcome(exitCode, stdout, stderrBytes > 0);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not read the flag parser's output: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            return new Outcome(130, new byte[0], false);
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(destroyOnExit);
            } catch (IllegalStateException shuttingDown) {
                // The hook runs and ends the child, which has ended already.
            }
        }
    }
}
