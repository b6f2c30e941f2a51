package org.vllmrouter.host;

import java.util.List;

import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;

/**
 * Turns launcher argv into RouterConfig JSON with GraalPy, for {@code launch} and
 * {@code print-config}.
 *
 * <p>Its signatures use JDK types only and GraalPy is touched inside method bodies, so loading
 * the launcher's commands (as Picocli does for every subcommand) never loads a GraalPy class.
 */
final class RouterArgsRunner {

    private RouterArgsRunner() {}

    /** The outcome of parsing: the config JSON, or the exit code the launcher ends with. */
    record ParsedArgv(String configJson, int exitCode) {}

    static boolean graalPyAvailable() {
        try {
            Class.forName("org.graalvm.polyglot.Context", false, RouterArgsRunner.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    /** Says that {@code command} needs the distribution's GraalPy; returns the exit code. */
    static int noGraalPy(String command) {
        System.err.println("vllm-router " + command + ": this build has no GraalPy (it is the engine jar"
                + " shipped in the Python wheel). Use `python -m vllm_router.launch_router ...`, or the"
                + " vllm-router distribution's bin/vllm-router, or `vllm-router serve --config FILE`.");
        return 1;
    }

    /**
     * Parses {@code argv} as {@code python -m vllm_router.launch_router} would. argparse writes
     * its own usage, errors and {@code --help} to stdout/stderr; other errors are written here.
     */
    static ParsedArgv parse(String command, List<String> argv) {
        if (!graalPyAvailable()) {
            return new ParsedArgv(null, noGraalPy(command));
        }
        try (GraalPyRouterArgs routerArgs = GraalPyRouterArgs.open()) {
            return new ParsedArgv(routerArgs.configJson(argv), 0);
        } catch (GraalPyRouterArgs.ArgvRejected rejected) {
            if (rejected.getMessage() != null) {
                System.err.println("vllm-router: error: " + rejected.getMessage());
            }
            return new ParsedArgv(null, rejected.exitCode());
        }
    }

    /**
     * Prints the configuration {@code launch} would hand the engine, normalised by the engine's
     * own reader (every field, canonical order). The engine's validation runs when it starts.
     */
    static int printConfig(List<String> argv) {
        ParsedArgv parsed = parse("print-config", argv);
        if (parsed.configJson() == null) {
            return parsed.exitCode();
        }
        try {
            System.out.println(RouterConfig.fromJson(parsed.configJson()).toJson());
            return 0;
        } catch (ConfigException e) {
            System.err.println("vllm-router: error: " + e.getMessage());
            return 1;
        }
    }
}
