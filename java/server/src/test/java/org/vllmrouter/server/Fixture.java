package org.vllmrouter.server;

import io.netty.util.concurrent.Ticker;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.settings.RouterSettings;

/** Router configurations for tests: ephemeral ports, sticky routing, fast health checks. */
final class Fixture {
    private Fixture() {}

    static Map<String, Object> base(List<String> workerUrls) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("worker_urls", workerUrls);
        c.put("host", "127.0.0.1");
        c.put("port", 0);
        c.put("prometheus_port", 0);
        c.put("policy", "sticky_least_loaded");
        c.put("worker_startup_check_interval", 1);
        c.put("worker_startup_timeout_secs", 10);
        c.put("retry_initial_backoff_ms", 1);
        c.put("retry_max_backoff_ms", 20);
        return c;
    }

    static RouterConfig config(Map<String, Object> fields) throws Exception {
        return RouterConfig.fromJson(TestHttp.JSON.writeValueAsString(fields));
    }

    /** The settings {@code fields} give, in this process's environment. */
    static RouterSettings settings(Map<String, Object> fields) throws Exception {
        return RouterSettings.of(config(fields), StartEnvironment.current());
    }

    static RouterServer start(Map<String, Object> fields) throws Exception {
        return RouterServer.start(config(fields));
    }

    /** A router whose limiter never refills by itself: only a finished request gives its token back. */
    static RouterServer startWithFrozenLimiter(Map<String, Object> fields) throws Exception {
        return RouterServer.start(settings(fields),
                RouterServer.Options.DEFAULTS.withLimiterClock(Ticker.newMockTicker()));
    }

    /** A router that gives a client {@code clientReadTimeout} to send each request. */
    static RouterServer startWithClientReadTimeout(Map<String, Object> fields, Duration clientReadTimeout)
            throws Exception {
        return RouterServer.start(settings(fields),
                RouterServer.Options.DEFAULTS.withClientReadTimeout(clientReadTimeout));
    }
}
