package org.vllmrouter.host;

import java.io.File;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.graalvm.polyglot.Context;
import org.graalvm.polyglot.EnvironmentAccess;
import org.graalvm.polyglot.HostAccess;
import org.graalvm.polyglot.PolyglotException;
import org.graalvm.polyglot.Source;
import org.graalvm.polyglot.Value;
import org.graalvm.polyglot.io.IOAccess;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Runs a Python program in GraalPy inside this JVM, as {@code python} runs it: {@code sys.argv},
 * {@code sys.path[0]} (the script's directory, {@code ''} for {@code -c}, the working directory
 * for {@code -m}), the standard streams, {@code KeyboardInterrupt} on SIGINT, a traceback on
 * stderr for an uncaught exception, and the exit status.
 *
 * <p>The packaged {@code vllm_router} comes first on {@code sys.path}, ahead of
 * {@code --python-path} and {@code PYTHONPATH}, so the Python surface always matches the engine
 * in this JVM; under GraalPy it picks {@code bridge.graal} and starts the engine here.
 *
 * <p>The launcher runs the program as this process ({@link #runAsThisProcess}): on GraalPy's native
 * POSIX backend, so {@code socket}, {@code select}, {@code os}, {@code signal} and {@code /proc}
 * are the operating system's as under CPython (the Java backend, for one, reports port 0 for a socket
 * bound to port 0 until it listens, and has no {@code os.getppid()}). That backend reads and writes
 * file descriptors 0, 1 and 2 whatever streams the context is given, and only sees real files, so
 * the packaged sources come from the distribution's {@code python/} directory, where GraalPy keeps
 * their bytecode as CPython does. A program given other streams ({@link #run}, for embedding and
 * tests) runs on the Java backend with the sources in the jar's virtual filesystem.
 */
final class PythonProgram {

    /**
     * Set by the distribution's script to its own path, which becomes {@code sys.executable} (and
     * starts the "can't open file" message, as {@code python}'s path starts CPython's).
     */
    static final String LAUNCHER_PROPERTY = "vllm.router.launcher";

    /** Set by the distribution's script to its {@code python/} directory: the packaged sources as files. */
    static final String SOURCES_PROPERTY = "vllm.router.python.sources";

    /** The exit status of a program ended by an uncaught KeyboardInterrupt, as a shell reports CPython's. */
    static final int KEYBOARD_INTERRUPT_STATUS = 130;

    private static final ObjectMapper JSON = new ObjectMapper();

    private PythonProgram() {}

    /**
     * Runs the program as this process: its standard streams are file descriptors 0, 1 and 2, and
     * the operating system's POSIX calls are the program's (the native backend). Needs the packaged
     * sources as files ({@value #SOURCES_PROPERTY}); without them the program runs as {@link #run}
     * runs it, on this process's streams.
     */
    static int runAsThisProcess(PythonCommandLine commandLine) {
        OutputStream err = new FileOutputStream(FileDescriptor.err);
        String sources = System.getProperty(SOURCES_PROPERTY);
        if (sources == null) {
            return run(commandLine, new FileInputStream(FileDescriptor.in), new FileOutputStream(FileDescriptor.out), err);
        }
        Context.Builder builder = Context.newBuilder("python")
                .engine(GraalPyRouterArgs.sharedEngine())
                .allowHostAccess(HostAccess.ALL)
                .allowHostClassLookup(GraalPyRouterArgs::isRouterClass)
                .allowIO(IOAccess.ALL)
                .allowNativeAccess(true)
                .allowCreateThread(true)
                .option("python.PosixModuleBackend", "native")
                // GraalPy warns that the native backend ignores the context's streams: it is this process.
                .option("log.python.level", "SEVERE")
                .option("python.ForceImportSite", "true")
                // As CPython: bytecode of the imported modules is kept in __pycache__ and reused.
                .option("python.DontWriteBytecodeFlag", "false")
                .err(err);
        try (Context context = programOptions(builder, commandLine, sources).build()) {
            return runProgram(context, commandLine, err);
        }
    }

    /**
     * Runs the program with the given standard streams (the launcher's are this process's file
     * descriptors, unbuffered here since Python buffers); returns the exit status {@code python}
     * would end with.
     */
    static int run(PythonCommandLine commandLine, InputStream in, OutputStream out, OutputStream err) {
        // Closing the context waits for non-daemon threads, runs the atexit handlers and flushes
        // sys.stdout and sys.stderr, as the interpreter does at exit. A router the program left
        // running drains when the JVM exits (InProcessEngines).
        Context.Builder builder = GraalPyRouterArgs.contextBuilder(out, err).in(in);
        try (Context context = programOptions(builder, commandLine, GraalPyRouterArgs.PACKAGED_SOURCES).build()) {
            return runProgram(context, commandLine, err);
        }
    }

    /** What {@code python} gives a program: argv, sys.path, sys.executable, the environment, processes, signals. */
    private static Context.Builder programOptions(Context.Builder builder, PythonCommandLine commandLine, String sources) {
        List<String> sysPath = new ArrayList<>();
        sysPath.add(sources);
        sysPath.addAll(commandLine.pythonPath());
        String fromEnvironment = System.getenv("PYTHONPATH");
        if (fromEnvironment != null && !fromEnvironment.isEmpty()) {
            sysPath.add(fromEnvironment);
        }
        return builder
                .allowCreateProcess(true)
                .allowEnvironmentAccess(EnvironmentAccess.INHERIT)
                .arguments("python", commandLine.argv().toArray(String[]::new))
                .option("python.PythonPath", String.join(File.pathSeparator, sysPath))
                .option("python.InputFilePath", commandLine.kind() == PythonCommandLine.Kind.FILE
                        ? Path.of(commandLine.program()).toAbsolutePath().toString()
                        : "")
                .option("python.Executable", System.getProperty(LAUNCHER_PROPERTY, "vllm-router"))
                // SIGINT raises KeyboardInterrupt in the main thread; signal.signal() works.
                .option("python.InstallSignalHandlers", "true");
    }

    private static int runProgram(Context context, PythonCommandLine commandLine, OutputStream err) {
        try {
            switch (commandLine.kind()) {
                // GraalPy's own entry point for `python FILE` and `python -`: sys.path[0], the
                // "can't open file" message and status 2, reading the program from stdin.
                case FILE, STDIN -> context.eval(Source.newBuilder("python", "__graalpython__.run_path()", "<internal>")
                        .internal(true).buildLiteral());
                case COMMAND -> context.eval(Source.newBuilder("python", commandLine.program(), "<string>").buildLiteral());
                // Evaluated, not called through Value.execute: a SystemExit escaping a call
                // reports status 1 whatever its code (GraalPy 25.0).
                case MODULE -> context.eval(Source.newBuilder("python",
                        "__import__('runpy')._run_module_as_main(" + pythonString(commandLine.program()) + ")",
                        "<internal>").internal(true).buildLiteral());
            }
            return 0;
        } catch (PolyglotException e) {
            return exitStatus(context, e, err);
        }
    }

    /** {@code text} as a Python string literal (a JSON string is one). */
    private static String pythonString(String text) {
        try {
            return JSON.writeValueAsString(text);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not encodable as a string literal: " + text, e);
        }
    }

    /**
     * The status of a program that raised, as {@code python} ends: SystemExit's status (a code
     * that is neither None nor an int is printed to stderr and means 1), else the traceback on
     * stderr through {@code sys.excepthook} and 1, or 130 for KeyboardInterrupt.
     */
    private static int exitStatus(Context context, PolyglotException e, OutputStream err) {
        Value exception = e.isGuestException() && !e.isInternalError() ? e.getGuestObject() : null;
        if (exception == null || exception.isNull()) {
            if (e.isExit()) {
                return e.getExitStatus();
            }
            // Not Python's: an internal error of GraalPy, or a Java exception from a host call.
            e.printStackTrace(new PrintStream(err, true, StandardCharsets.UTF_8));
            return 1;
        }
        // Expressions only: nothing is bound in __main__, which atexit handlers may still read.
        Value isInstance = context.eval("python", "isinstance");
        if (e.isExit()) {
            // GraalPy 25.0 turns SystemExit("message") into status 1 without printing the message.
            if (isInstance.execute(exception, context.eval("python", "SystemExit")).asBoolean()) {
                context.eval("python", "lambda code: print(code, file=__import__('sys').stderr)")
                        .execute(exception.getMember("code"));
            }
            return e.getExitStatus();
        }
        context.eval("python", "__import__('sys').excepthook")
                .execute(exception.getMetaObject(), exception, exception.getMember("__traceback__"));
        boolean interrupted = isInstance.execute(exception, context.eval("python", "KeyboardInterrupt")).asBoolean();
        return interrupted ? KEYBOARD_INTERRUPT_STATUS : 1;
    }
}
