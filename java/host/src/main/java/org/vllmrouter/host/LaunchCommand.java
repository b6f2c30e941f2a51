package org.vllmrouter.host;

import java.io.ByteArrayInputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;

import org.vllmrouter.server.EngineRunner;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code vllm-router launch ARGS...}: {@code python -m vllm_router.launch_router ARGS...} without
 * CPython. GraalPy parses the flags with the package's own {@code router_args.py}; the engine then
 * serves in this JVM until SIGTERM/SIGINT.
 *
 * <p>Start-up is the cost that matters here, so the parse runs in a child JVM set up for a short
 * interpreted run and started first ({@link ArgvParserProcess}); a launch with flags parsed before
 * by the same jars skips it ({@link ParsedConfigCache}). This JVM only waits meanwhile: warming the
 * engine with a throw-away router during the parse was measured and reached /health no sooner on
 * two cores, where it competes with the parse for CPU.
 */
@Command(
        name = "launch",
        description = {
            "Start the router from upstream-style flags, parsed exactly as",
            "`python -m vllm_router.launch_router` parses them. `launch --help` lists the flags."
        })
final class LaunchCommand implements Callable<Integer> {

    @Parameters(paramLabel = "ARGS", description = "Router flags (see `launch --help`).")
    private List<String> routerArgs = new ArrayList<>();

    @Override
    public Integer call() {
        return launch(routerArgs);
    }

    /** {@code launch ARGS}; {@link Main#main} calls it directly, ahead of Picocli, to start the parse sooner. */
    static int launch(List<String> routerArgs) {
        if (!RouterArgsRunner.graalPyAvailable()) {
            return RouterArgsRunner.noGraalPy("launch");
        }
        Optional<ParsedConfigCache> cache = ParsedConfigCache.forArgv(routerArgs);
        Optional<String> cached = cache.flatMap(ParsedConfigCache::read);
        if (cached.isPresent()) {
            return EngineRunner.serve(new ByteArrayInputStream(cached.get().getBytes(StandardCharsets.UTF_8)), false);
        }
        ArgvParserProcess.Outcome parsed;
        try {
            parsed = ArgvParserProcess.start(routerArgs).await();
        } catch (UncheckedIOException e) {
            System.err.println("vllm-router launch: " + e.getMessage());
            return 1;
        }
        String stdout = new String(parsed.stdout(), StandardCharsets.UTF_8);
        if (parsed.exitCode() != 0 || !stdout.startsWith("{")) {
            // Usage errors (argparse already wrote them to stderr) or the text of --help.
            System.out.print(stdout);
            System.out.flush();
            return parsed.exitCode();
        }
        if (!parsed.wroteStderr()) {
            cache.ifPresent(entry -> entry.write(stdout));
        }
        return EngineRunner.serve(new ByteArrayInputStream(parsed.stdout()), false);
    }
}
