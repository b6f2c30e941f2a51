package org.vllmrouter.host;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code vllm-router print-config ARGS...}: the configuration {@code launch ARGS...} would serve. */
@Command(
        name = "print-config",
        description = {
            "Parse router flags exactly as `python -m vllm_router.launch_router` does and print the",
            "resulting configuration JSON, then exit. `print-config --help` lists the flags."
        })
final class PrintConfigCommand implements Callable<Integer> {

    @Parameters(paramLabel = "ARGS", description = "Router flags (see `print-config --help`).")
    private List<String> routerArgs = new ArrayList<>();

    @Override
    public Integer call() {
        return RouterArgsRunner.printConfig(routerArgs);
    }
}
