package org.vllmrouter.host;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.vllmrouter.server.EngineRunner;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code vllm-router launch ARGS...}: {@code python -m vllm_router.launch_router ARGS...} without
 * CPython. GraalPy parses the flags with the package's own {@code router_args.py}; the engine then
 * serves in this JVM until SIGTERM/SIGINT.
 *
 * <p>The distribution's {@code bin/vllm-router launch} runs {@code print-config} and {@code serve}
 * in two JVMs instead, so the parse gets a C1-only JIT and the engine the full one; this command
 * is the single-JVM form for {@code java -cp ... org.vllmrouter.host.Main launch}.
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
        RouterArgsRunner.ParsedArgv parsed = RouterArgsRunner.parse("launch", routerArgs);
        if (parsed.configJson() == null) {
            return parsed.exitCode();
        }
        return EngineRunner.serve(new ByteArrayInputStream(parsed.configJson().getBytes(StandardCharsets.UTF_8)), false);
    }
}
