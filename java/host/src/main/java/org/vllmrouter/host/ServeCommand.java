package org.vllmrouter.host;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

import org.vllmrouter.server.EngineRunner;
import org.vllmrouter.server.StartupReport;

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

    @Option(
            names = "--report",
            paramLabel = "json|upstream",
            defaultValue = "json",
            description = {
                "How start-up is reported: `json`, the one JSON line above (the default), or `upstream`, the",
                "lines of upstream's `python -m vllm_router.launch_router` (`Router: URL` and `Dashboard: URL`",
                "on stdout; a failure is `Error starting router: ...` on stderr and exit status 1). The Python",
                "package's `vllm-router` command uses `upstream` when the engine takes its place."
            })
    private Report report;

    /** The values of {@code --report}, spelt as on the command line. */
    enum Report {
        json(StartupReport.JSON_EVENT),
        upstream(StartupReport.UPSTREAM_LAUNCHER);

        final StartupReport startupReport;

        Report(StartupReport startupReport) {
            this.startupReport = startupReport;
        }
    }

    @Override
    public Integer call() {
        return serve(config, report);
    }

    /** {@code serve --config CONFIG --report REPORT}; {@link Main#main} calls it directly for those argv shapes. */
    static int serve(String config, Report report) {
        if (config.equals("-")) {
            return EngineRunner.serve(System.in, true, report.startupReport);
        }
        byte[] json;
        try {
            // Read whole before serving, so the file is not held open while the router runs.
            json = Files.readAllBytes(Path.of(config));
        } catch (IOException e) {
            System.err.println("vllm-router serve: cannot read the configuration file " + config + ": " + e);
            return 1;
        }
        return EngineRunner.serve(new ByteArrayInputStream(json), false, report.startupReport);
    }
}
