package org.vllmrouter.host;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.vllmrouter.server.EngineLogging;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code vllm-router python [--python-path DIR]... (SCRIPT | -c CODE | -m MODULE | -) [ARG]...}:
 * a Python program run in GraalPy inside this JVM, so {@code Router.from_args(args).launch()} and
 * {@code launch_router(args)} start the engine in the same process and session calls are direct
 * calls (see docs/architecture.md, 'The process bridge').
 *
 * <p>Its signatures use JDK types only ({@link PythonProgram} names GraalPy's), so Picocli loading
 * this command loads no GraalPy class.
 */
@Command(
        name = "python",
        description = {
            "Run a Python program (SCRIPT, -c CODE, -m MODULE or -) in GraalPy inside this JVM, with the",
            "vllm_router package importable and its engine in the same process. `python --help` says more."
        })
final class PythonCommand implements Callable<Integer> {

    @Parameters(paramLabel = "ARGS", description = "[--python-path DIR]... (SCRIPT | -c CODE | -m MODULE | -) [ARG]...")
    private List<String> args = new ArrayList<>();

    @Override
    public Integer call() {
        return python(args);
    }

    /** {@code python ARGS}; {@link Main#main} calls it directly, ahead of Picocli. */
    static int python(List<String> args) {
        PythonCommandLine commandLine;
        try {
            commandLine = PythonCommandLine.parse(args);
        } catch (PythonCommandLine.HelpRequested help) {
            System.out.println(PythonCommandLine.USAGE);
            return 0;
        } catch (PythonCommandLine.UsageError e) {
            System.err.println("vllm-router python: " + e.getMessage());
            System.err.println(PythonCommandLine.USAGE.lines().findFirst().orElseThrow());
            return 2;
        }
        if (!RouterArgsRunner.graalPyAvailable()) {
            return RouterArgsRunner.noGraalPy("python");
        }
        // The engine logs as it does in its own process (the process bridge's child JVM).
        EngineLogging.useOneLineFormat();
        return PythonProgram.runAsThisProcess(commandLine);
    }
}
