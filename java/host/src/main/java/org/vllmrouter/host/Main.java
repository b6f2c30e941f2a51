package org.vllmrouter.host;

import java.util.List;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code vllm-router} launcher.
 *
 * <p>{@code serve} and {@code mock-worker} are plain Java. {@code launch} and {@code print-config}
 * run the Python package's {@code router_args.py} in GraalPy, so the JVM accepts exactly the
 * flags, defaults and errors of {@code python -m vllm_router.launch_router}.
 */
@Command(
        name = "vllm-router",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        subcommands = {ServeCommand.class, LaunchCommand.class, PrintConfigCommand.class, MockWorkerCommand.class},
        description = "A vLLM router with a Java engine.")
public final class Main implements Runnable {

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("launch")) {
            // Every argument of `launch` belongs to argparse; skipping Picocli's set-up starts the
            // flag parser, the critical path of start-up, a few hundred milliseconds sooner.
            System.exit(LaunchCommand.launch(List.of(args).subList(1, args.length)));
        }
        System.exit(execute(args));
    }

    /** Runs the launcher and returns its exit code (tests call this instead of {@link #main}). */
    public static int execute(String... args) {
        return commandLine().execute(args);
    }

    static CommandLine commandLine() {
        return new CommandLine(new Main())
                // Arguments after `launch`/`print-config` belong to argparse, `@file` included.
                .setExpandAtFiles(false)
                .setUnmatchedOptionsArePositionalParams(true)
                .setStopAtPositional(true);
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing subcommand");
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = Main.class.getPackage().getImplementationVersion();
            return new String[] {"vllm-router " + (version == null ? "(development build)" : version)};
        }
    }
}
