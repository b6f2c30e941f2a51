package org.vllmrouter.host;

import java.util.List;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code vllm-router} launcher.
 *
 * <p>{@code serve} and {@code mock-worker} are plain Java. {@code launch} and {@code print-config}
 * run the Python package's {@code router_args.py} in GraalPy, so the JVM accepts exactly the
 * flags, defaults and errors of {@code python -m vllm_router.launch_router}. {@code python} runs a
 * whole Python program in GraalPy, with the engine in this JVM.
 */
@Command(
        name = "vllm-router",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        subcommands = {
            ServeCommand.class, LaunchCommand.class, PythonCommand.class, PrintConfigCommand.class, MockWorkerCommand.class,
            SimulateCommand.class, RolloutCommand.class
        },
        description = "A vLLM router with a Java engine.")
public final class Main implements Runnable {

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        // Start-up is what users wait for, and Picocli's set-up is costly in a cold JVM: the
        // argv shapes that start a router go straight to their command. Every argument of `launch`
        // belongs to argparse and every argument of `python` to its program; `serve --config -` is
        // how the Python package starts the engine, `serve --config FILE --report upstream` how its
        // `vllm-router` command hands its process over to the engine.
        if (args.length > 0 && args[0].equals("launch")) {
            System.exit(LaunchCommand.launch(List.of(args).subList(1, args.length)));
        }
        if (args.length > 0 && args[0].equals("python")) {
            System.exit(PythonCommand.python(List.of(args).subList(1, args.length)));
        }
        if (args.length == 3 && isServeConfig(args)) {
            System.exit(ServeCommand.serve(args[2], ServeCommand.Report.json));
        }
        if (args.length == 5 && isServeConfig(args) && args[3].equals("--report") && args[4].equals("upstream")) {
            System.exit(ServeCommand.serve(args[2], ServeCommand.Report.upstream));
        }
        System.exit(execute(args));
    }

    private static boolean isServeConfig(String[] args) {
        return args[0].equals("serve") && args[1].equals("--config") && (args[2].equals("-") || !args[2].startsWith("-"));
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
