package org.vllmrouter.server;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.settings.RouterSettings;

/**
 * The engine-process protocol: read the config JSON, start the router, report that it serves or why not (by
 * default exactly one JSON line on stdout, {@code ready}, or {@code error} whose {@code kind} is {@code config} for
 * a configuration the engine rejects and {@code startup} for any other failure; see {@link StartupReport}), then
 * serve until stdin reaches EOF (when it is the lifeline) or the process gets SIGTERM/SIGINT; either way stop
 * accepting, drain in-flight requests for a bounded time, and exit 0.
 * Logs go to stderr. See docs/architecture.md, 'The process bridge'.
 */
public final class EngineRunner {
    private static final Logger LOG = Logger.getLogger(EngineRunner.class.getName());
    private static final String CONFIG_ERROR = "config";
    private static final String STARTUP_ERROR = "startup";

    private EngineRunner() {}

    /** Serves with the JSON protocol line ({@link StartupReport#JSON_EVENT}); returns the process exit code. */
    public static int serve(InputStream configSource, boolean stdinIsLifeline) {
        return serve(configSource, stdinIsLifeline, StartupReport.JSON_EVENT);
    }

    /** Returns the process exit code. */
    public static int serve(InputStream configSource, boolean stdinIsLifeline, StartupReport report) {
        EngineLogging.useOneLineFormat();
        PrintStream out = System.out;
        PrintStream err = System.err;
        StartEnvironment environment = StartEnvironment.current();
        Optional<HeapGrowthBound> heapBound;
        try {
            heapBound = HeapGrowthBound.of(environment);
        } catch (IllegalArgumentException e) {
            return report.failed(out, err, STARTUP_ERROR, e.getMessage(), 2);
        }
        BufferedReader reader = new BufferedReader(new InputStreamReader(configSource, StandardCharsets.UTF_8));
        String json;
        try {
            json = stdinIsLifeline ? reader.readLine() : readAll(reader);
        } catch (IOException e) {
            return report.failed(out, err, STARTUP_ERROR, "Could not read the configuration: " + e.getMessage(), 2);
        }
        if (json == null || json.isBlank()) {
            return report.failed(out, err, STARTUP_ERROR, "No configuration received", 2);
        }
        RouterSettings settings;
        try {
            settings = RouterSettings.of(RouterConfig.fromJson(json), environment);
        } catch (ConfigException e) {
            return report.failed(out, err, CONFIG_ERROR, e.getMessage(), 2);
        }
        // Stop signals are taken from here, before the start: see EngineStop. The hook covers the other ways a JVM
        // shuts down (SIGHUP, a signal StopSignals could not take).
        EngineStop stop = new EngineStop(status -> Runtime.getRuntime().halt(status));
        Thread drainOnShutdown = new Thread(stop::onShutdown, "vllm-router-shutdown");
        Runtime.getRuntime().addShutdownHook(drainOnShutdown);
        StopSignals stopSignals = StopSignals.handle(stop::onSignal);
        RouterServer server = null;
        try {
            EngineLogging.configure(settings.logging());
            server = RouterServer.start(settings, RouterServer.Options.DEFAULTS.withBeforeListening(stop::binding));
        } catch (RouterStartException e) {
            return report.failed(out, err, STARTUP_ERROR, e.getMessage(), 1);
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "Router failed to start", e);
            return report.failed(out, err, STARTUP_ERROR, "Router failed to start: " + e, 1);
        } finally {
            if (server == null) {
                stopHandling(stopSignals, drainOnShutdown);
            }
        }
        if (!stop.serving(server)) {
            int status = stop.drain();
            stopHandling(stopSignals, drainOnShutdown);
            return status;
        }

        report.ready(out, err, server, settings.server(), settings.auth());
        heapBound.ifPresent(HeapGrowthBound::start);

        if (stdinIsLifeline) {
            waitForEof(reader);
            LOG.info("Lifeline closed, draining in-flight requests");
        } else {
            awaitForever();
        }
        stopHandling(stopSignals, drainOnShutdown);
        return stop.drain();
    }

    /** The signals get their handling back and the hook goes; a shutdown already under way keeps the hook. */
    private static void stopHandling(StopSignals stopSignals, Thread drainOnShutdown) {
        stopSignals.close();
        try {
            Runtime.getRuntime().removeShutdownHook(drainOnShutdown);
        } catch (IllegalStateException shuttingDown) {
            // The hook drains and ends the process.
            awaitForever();
        }
    }

    private static String readAll(BufferedReader reader) throws IOException {
        StringBuilder text = new StringBuilder();
        char[] buffer = new char[8192];
        int n;
        while ((n = reader.read(buffer)) >= 0) {
            text.append(buffer, 0, n);
        }
        return text.toString();
    }

    private static void waitForEof(BufferedReader reader) {
        char[] buffer = new char[1024];
        try {
            while (reader.read(buffer) >= 0) {
                // Anything written after the config line is ignored; only EOF matters.
            }
        } catch (IOException e) {
            LOG.warning("Lifeline read failed (" + e.getMessage() + "); treating it as closed");
        }
    }

    private static void awaitForever() {
        CountDownLatch never = new CountDownLatch(1);
        while (true) {
            try {
                never.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
