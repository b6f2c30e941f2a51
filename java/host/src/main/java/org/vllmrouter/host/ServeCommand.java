package org.vllmrouter.host;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

import org.vllmrouter.server.EngineRunner;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code vllm-router serve --config FILE|-}: the engine alone, configured by RouterConfig JSON. */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = {
            "Run the router engine from a RouterConfig JSON document (no Python involved).",
            "Prints one JSON line on stdout when ready: {\"event\":\"ready\",\"url\":...,\"port\":...,"
                    + "\"metrics_port\":...} or {\"event\":\"error\",\"kind\":...,\"message\":...},",
            "where kind is \"config\" for a configuration the engine rejects and \"startup\" for any other failure."
        })
final class ServeCommand implements Callable<Integer> {

    @Option(
            names = "--config",
            required = true,
            paramLabel = "FILE|-",
            description = {
                "The configuration file, or `-`: read one line of JSON from stdin and keep stdin as a",
                "lifeline (EOF means stop: drain in-flight requests, then exit 0). `-` is how the",
                "Python package runs the engine."
            })
    private String config;

    @Override
    public Integer call() {
        return serve(config);
    }

    /** {@code serve --config CONFIG}; {@link Main#main} calls it directly for that exact argv. */
    static int serve(String config) {
        if (config.equals("-")) {
            return EngineRunner.serve(System.in, true);
        }
        try (InputStream file = Files.newInputStream(Path.of(config))) {
            return EngineRunner.serve(file, false);
        } catch (IOException e) {
            System.err.println("vllm-router serve: cannot read the configuration file " + config + ": " + e);
            return 1;
        }
    }
}
