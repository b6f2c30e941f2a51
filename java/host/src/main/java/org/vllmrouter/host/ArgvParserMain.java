package org.vllmrouter.host;

import java.util.List;

/**
 * The child JVM of {@code launch}: GraalPy turns the router flags into the engine's configuration,
 * printed as one JSON line on stdout; argparse's usage, errors and {@code --help} go where they go
 * under CPython, and the exit status is argparse's. See {@link ArgvParserProcess}.
 */
public final class ArgvParserMain {
    private ArgvParserMain() {}

    public static void main(String[] args) {
        RouterArgsRunner.ParsedArgv parsed = RouterArgsRunner.parse("launch", List.of(args));
        if (parsed.configJson() != null) {
            System.out.println(parsed.configJson());
            System.out.flush();
        }
        System.exit(parsed.configJson() != null ? 0 : parsed.exitCode());
    }
}
