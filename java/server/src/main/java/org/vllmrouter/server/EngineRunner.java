package org.vllmrouter.server;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.server.http.Json;

/**
 * The engine-process protocol: read the config JSON, start the router, print exactly one JSON line on stdout
 * ({@code ready}, or {@code error} whose {@code kind} is {@code config} for a configuration the engine rejects and
 * {@code startup} for any other failure), then serve until stdin reaches EOF (when it is the lifeline) or the process
 * gets SIGTERM/SIGINT; either way stop accepting, drain in-flight requests for a bounded time, and exit 0.
 * Logs go to stderr. See docs/architecture.md, 'The process bridge'.
 */
public final class EngineRunner {
    private static final String LOG_FORMAT_PROPERTY = "java.util.logging.SimpleFormatter.format";
    private static final Logger LOG = Logger.getLogger(EngineRunner.class.getName());
    private static final String CONFIG_ERROR = "config";
    private static final String STARTUP_ERROR = "startup";

    private EngineRunner() {}

    /** Returns the process exit code. */
    public static int serve(InputStream configSource, boolean stdinIsLifeline) {
        useOneLineLogFormat();
        PrintStream out = System.out;
        BufferedReader reader = new BufferedReader(new InputStreamReader(configSource, StandardCharsets.UTF_8));
        String json;
        try {
            json = stdinIsLifeline ? reader.readLine() : readAll(reader);
        } catch (IOException e) {
            return fail(out, STARTUP_ERROR, "Could not read the configuration: " + e.getMessage(), 2);
        }
        if (json == null || json.isBlank()) {
            return fail(out, STARTUP_ERROR, "No configuration received", 2);
        }
        RouterConfig config;
        try {
            config = RouterConfig.fromJson(json);
            config.validate();
        } catch (ConfigException e) {
            return fail(out, CONFIG_ERROR, e.getMessage(), 2);
        }
        applyLogLevel(config.logLevel());
        RouterServer server;
        try {
            server = RouterServer.start(config);
        } catch (ConfigException e) {
            return fail(out, CONFIG_ERROR, e.getMessage(), 2);
        } catch (RouterStartException e) {
            return fail(out, STARTUP_ERROR, e.getMessage(), 1);
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "Router failed to start", e);
            return fail(out, STARTUP_ERROR, "Router failed to start: " + e, 1);
        }

        // A signal starts the JVM's shutdown with exit status 128+signal; after draining, the hook ends the process
        // with 0 itself, since a graceful stop is a successful run.
        Thread drainOnSignal = new Thread(() -> {
            LOG.info("Received terminate signal, draining in-flight requests");
            server.close();
            Runtime.getRuntime().halt(0);
        }, "vllm-router-shutdown");
        Runtime.getRuntime().addShutdownHook(drainOnSignal);

        out.println(Json.object(g -> {
            g.writeStringField("event", "ready");
            g.writeStringField("url", server.url());
            g.writeNumberField("port", server.port());
            g.writeNumberField("metrics_port", server.metricsPort());
        }));
        out.flush();

        if (stdinIsLifeline) {
            waitForEof(reader);
            LOG.info("Lifeline closed, draining in-flight requests");
        } else {
            awaitForever();
        }
        try {
            Runtime.getRuntime().removeShutdownHook(drainOnSignal);
        } catch (IllegalStateException shuttingDown) {
            // A signal arrived at the same moment: the hook drains and exits.
            awaitForever();
        }
        server.close();
        return 0;
    }

    private static int fail(PrintStream out, String kind, String message, int code) {
        out.println(Json.object(g -> {
            g.writeStringField("event", "error");
            g.writeStringField("kind", kind);
            g.writeStringField("message", message);
        }));
        out.flush();
        return code;
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

    /**
     * One line per log record on stderr, unless the launcher chose a format. Call it before
     * anything logs: the console handler reads the format once.
     */
    public static void useOneLineLogFormat() {
        if (System.getProperty(LOG_FORMAT_PROPERTY) == null) {
            System.setProperty(LOG_FORMAT_PROPERTY, "%1$tF %1$tT %4$s %3$s: %5$s%6$s%n");
        }
    }

    /** The JVM-wide log level for RouterArgs' {@code log_level}; null keeps the current one. */
    public static void applyLogLevel(String level) {
        if (level == null) {
            return;
        }
        Level jul = switch (level.toLowerCase(Locale.ROOT)) {
            case "debug", "trace" -> Level.FINE;
            case "warn", "warning" -> Level.WARNING;
            case "error", "critical" -> Level.SEVERE;
            default -> Level.INFO;
        };
        Logger root = Logger.getLogger("");
        root.setLevel(jul);
        for (var handler : root.getHandlers()) {
            handler.setLevel(jul);
        }
    }
}
