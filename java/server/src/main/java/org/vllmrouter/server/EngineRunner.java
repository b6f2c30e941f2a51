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
        Optional<HeapGrowthBound> heapBound;
        try {
            heapBound = HeapGrowthBound.fromSystemProperty();
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
        RouterConfig config;
        try {
            config = RouterConfig.fromJson(json);
            config.validate();
        } catch (ConfigException e) {
            return report.failed(out, err, CONFIG_ERROR, e.getMessage(), 2);
        }
        RouterServer server;
        try {
            EngineLogging.configure(config);
            server = RouterServer.start(config);
        } catch (ConfigException e) {
            return report.failed(out, err, CONFIG_ERROR, e.getMessage(), 2);
        } catch (RouterStartException e) {
            return report.failed(out, err, STARTUP_ERROR, e.getMessage(), 1);
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "Router failed to start", e);
            return report.failed(out, err, STARTUP_ERROR, "Router failed to start: " + e, 1);
        }

        // SIGTERM/SIGINT drain before the JVM's shutdown begins (StopSignals); the hook covers the other ways a JVM
        // shuts down (SIGHUP, a signal StopSignals could not take). Either way the process ends with 0 once drained,
        // not the 128+signal of a JVM's shutdown, since a graceful stop is a successful run. One drain at a time: a
        // second stop waits for the first, which ends the process. A drain that fails still ends it, with 1: the
        // signal's thread would otherwise die with the error and leave a router that no stop signal ends (seen when
        // its jar was overwritten in place while it ran, and the drain's first use of a class could not load it).
        Object drainLock = new Object();
        Runnable drainAndExit = () -> {
            synchronized (drainLock) {
                LOG.info("Received terminate signal, draining in-flight requests");
                int status = 1;
                try {
                    server.close();
                    status = 0;
                } catch (Throwable e) {
                    LOG.log(Level.SEVERE, "Draining failed; stopping without it", e);
                } finally {
                    Runtime.getRuntime().halt(status);
                }
            }
        };
        Thread drainOnSignal = new Thread(drainAndExit, "vllm-router-shutdown");
        Runtime.getRuntime().addShutdownHook(drainOnSignal);
        StopSignals stopSignals = StopSignals.handle(drainAndExit);

        report.ready(out, err, server, config);
        heapBound.ifPresent(HeapGrowthBound::start);

        if (stdinIsLifeline) {
            waitForEof(reader);
            LOG.info("Lifeline closed, draining in-flight requests");
        } else {
            awaitForever();
        }
        stopSignals.close();
        try {
            Runtime.getRuntime().removeShutdownHook(drainOnSignal);
        } catch (IllegalStateException shuttingDown) {
            // A signal arrived at the same moment: the hook drains and exits.
            awaitForever();
        }
        synchronized (drainLock) {
            server.close();
        }
        return 0;
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
