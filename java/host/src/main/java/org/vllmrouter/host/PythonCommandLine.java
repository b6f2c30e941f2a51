package org.vllmrouter.host;

import java.util.ArrayList;
import java.util.List;

/**
 * The arguments of {@code vllm-router python}, read as {@code python} reads its own: launcher
 * options first, then the program ({@code SCRIPT}, {@code -c CODE}, {@code -m MODULE} or
 * {@code -} for stdin), which ends the option list; everything after it is the program's
 * {@code sys.argv[1:]}.
 *
 * @param pythonPath directories from {@code --python-path}, in the order given
 * @param kind how the program is given
 * @param program the script's path, the code, or the module name ({@code -} for stdin)
 * @param argv {@code sys.argv} as {@code python} sets it before the program runs: the script or
 *     {@code -c} / {@code -m} / {@code -}, then the program's arguments ({@code runpy} replaces
 *     {@code -m} with the module's path)
 */
record PythonCommandLine(List<String> pythonPath, Kind kind, String program, List<String> argv) {

    static final String USAGE = """
            usage: vllm-router python [--python-path DIR]... (SCRIPT | -c CODE | -m MODULE | -) [ARG]...
            Runs a Python program in GraalPy inside this JVM, with the vllm_router package importable
            (Router.launch() and launch_router() start the engine in the same process).
              SCRIPT              the program file; its directory goes first on sys.path
              -c CODE             the program as a string
              -m MODULE           run a module as a script (runpy), like python -m
              -                   read the program from stdin
              --python-path DIR   add DIR to sys.path (repeatable); PYTHONPATH is honoured too
              -h, --help          this help
            Pure-Python packages only: packages with native extensions (torch, ray, numpy) need
            CPython and the process bridge (python SCRIPT).""";

    enum Kind { FILE, COMMAND, MODULE, STDIN }

    PythonCommandLine {
        pythonPath = List.copyOf(pythonPath);
        argv = List.copyOf(argv);
    }

    /** Thrown for arguments {@code python} would reject; the message is one line for stderr. */
    static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    /** Thrown for {@code -h} / {@code --help}: the caller prints {@link #USAGE} and exits 0. */
    static final class HelpRequested extends Exception {
        private static final long serialVersionUID = 1L;
    }

    static PythonCommandLine parse(List<String> args) throws UsageError, HelpRequested {
        List<String> pythonPath = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            List<String> rest = args.subList(i + 1, args.size());
            switch (arg) {
                case "-h", "--help" -> throw new HelpRequested();
                case "--python-path" -> {
                    if (rest.isEmpty()) {
                        throw new UsageError("--python-path needs a directory");
                    }
                    pythonPath.add(args.get(++i));
                }
                case "-c", "-m" -> {
                    if (rest.isEmpty()) {
                        throw new UsageError("Argument expected for the " + arg + " option");
                    }
                    Kind kind = arg.equals("-c") ? Kind.COMMAND : Kind.MODULE;
                    return new PythonCommandLine(pythonPath, kind, rest.get(0), withArgv0(arg, rest.subList(1, rest.size())));
                }
                case "-" -> {
                    return new PythonCommandLine(pythonPath, Kind.STDIN, arg, withArgv0(arg, rest));
                }
                default -> {
                    if (arg.startsWith("--python-path=")) {
                        pythonPath.add(arg.substring("--python-path=".length()));
                    } else if (arg.startsWith("-")) {
                        throw new UsageError("unknown option " + arg);
                    } else {
                        return new PythonCommandLine(pythonPath, Kind.FILE, arg, withArgv0(arg, rest));
                    }
                }
            }
        }
        throw new UsageError("no program: give a SCRIPT, -c CODE, -m MODULE or -");
    }

    private static List<String> withArgv0(String argv0, List<String> rest) {
        List<String> argv = new ArrayList<>(rest.size() + 1);
        argv.add(argv0);
        argv.addAll(rest);
        return argv;
    }
}
