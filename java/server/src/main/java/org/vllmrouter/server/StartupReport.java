package org.vllmrouter.server;

import java.io.PrintStream;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import org.vllmrouter.core.settings.AuthSettings;
import org.vllmrouter.core.settings.ServerSettings;
import org.vllmrouter.server.http.Json;

/** How {@link EngineRunner} tells whoever started it that the router serves, or why it does not. */
public enum StartupReport {
    /**
     * One JSON line on stdout, {@code ready} or {@code error}, read by a program: the Python package's process bridge,
     * the launcher, a supervisor. {@code ready} names the router's URL as bound ({@code url}) and as a client on this
     * machine reaches it ({@code client_url}, see {@link #clientUrl}), which the process bridge hands its caller. The
     * exit status is the one {@link EngineRunner} gives: 2 for a configuration it could not read or rejects, 1 for a
     * router that failed to start.
     */
    JSON_EVENT {
        @Override
        void ready(PrintStream out, PrintStream err, RouterServer server, ServerSettings listener,
                   AuthSettings auth) {
            out.println(Json.object(g -> {
                g.writeStringField("event", "ready");
                g.writeStringField("url", server.url());
                g.writeStringField("client_url", clientUrl(listener.host(), server.port()));
                g.writeNumberField("port", server.port());
                g.writeNumberField("metrics_port", server.metricsPort());
            }));
            out.flush();
        }

        @Override
        int failed(PrintStream out, PrintStream err, String kind, String message, int code) {
            out.println(Json.object(g -> {
                g.writeStringField("event", "error");
                g.writeStringField("kind", kind);
                g.writeStringField("message", message);
            }));
            out.flush();
            return code;
        }
    },

    /**
     * The lines of upstream's {@code python -m vllm_router.launch_router}, for the engine that has taken that
     * command's place ({@code exec}): {@code Router: URL} and {@code Dashboard: URL/dashboard} on stdout once it
     * serves; a failure is the launcher's {@code Error starting router: ...} log line on stderr and exit status 1,
     * the status of the Python exception upstream ends with.
     */
    UPSTREAM_LAUNCHER {
        @Override
        void ready(PrintStream out, PrintStream err, RouterServer server, ServerSettings listener,
                   AuthSettings auth) {
            String url = clientUrl(listener.host(), server.port());
            boolean locked = auth.adminLocked();
            out.println("Router: " + url);
            out.println("Dashboard: " + url + "/dashboard" + (locked ? " (asks for the admin API key)" : ""));
            out.flush();
        }

        @Override
        int failed(PrintStream out, PrintStream err, String kind, String message, int code) {
            // The format launch_router.main gives Python's logging.
            err.println("[Router (Python)] " + LocalDateTime.now().format(PYTHON_ASCTIME)
                    + " - ERROR - Error starting router: " + message);
            err.flush();
            return 1;
        }
    };

    private static final DateTimeFormatter PYTHON_ASCTIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss,SSS");

    abstract void ready(PrintStream out, PrintStream err, RouterServer server, ServerSettings listener,
                        AuthSettings auth);

    /** Reports a failure of {@code kind} ({@code config} or {@code startup}); returns the exit status. */
    abstract int failed(PrintStream out, PrintStream err, String kind, String message, int code);

    /**
     * The URL a client on this machine reaches a listener bound to {@code bindHost} at: a wildcard address becomes the
     * loopback one. The one place the rule lives; the Python process bridge takes it from the ready line.
     */
    static String clientUrl(String bindHost, int port) {
        String host;
        if (bindHost.isEmpty() || bindHost.equals("0.0.0.0")) {
            host = "127.0.0.1";
        } else if (bindHost.equals("::")) {
            host = "[::1]";
        } else if (bindHost.contains(":") && !bindHost.startsWith("[")) {
            host = "[" + bindHost + "]";
        } else {
            host = bindHost;
        }
        return "http://" + host + ":" + port;
    }
}
