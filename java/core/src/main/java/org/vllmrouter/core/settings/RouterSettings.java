package org.vllmrouter.core.settings;

import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.policy.PolicySettings;
import org.vllmrouter.core.worker.WorkerSettings;

/**
 * A router's configuration cut into the sections its components read, built once at start from the flat
 * {@link RouterConfig} (the wire contract) and the {@link StartEnvironment}. Each component takes its own section,
 * never the whole configuration, so what a component can see is what it is given.
 */
public record RouterSettings(ServerSettings server, AdmissionSettings admission, RetrySettings retry,
                             HealthSettings health, WorkerPoolSettings workers, WorkerSettings worker,
                             PolicySettings policies, SessionSettings sessions, PdSettings pd,
                             KvEventSettings kvEvents, DiscoverySettings discovery, MetricsSettings metrics,
                             LoggingSettings logging, AuthSettings auth, DashboardSettings dashboard,
                             TracingSettings tracing) {

    /**
     * Checks {@code config} ({@link RouterConfig#validate()}) and cuts it into sections, with the values taken from
     * {@code env}.
     *
     * @throws ConfigException as {@link RouterConfig#validate()} does
     */
    public static RouterSettings of(RouterConfig config, StartEnvironment env) throws ConfigException {
        config.validate();
        return new RouterSettings(ServerSettings.from(config, env), AdmissionSettings.from(config),
                RetrySettings.from(config), HealthSettings.from(config), WorkerPoolSettings.from(config, env),
                WorkerSettings.from(config), PolicySettings.from(config), SessionSettings.from(config, env),
                PdSettings.from(config, env), KvEventSettings.from(config), DiscoverySettings.from(config),
                MetricsSettings.from(config), LoggingSettings.from(config), AuthSettings.from(config),
                DashboardSettings.from(config), TracingSettings.from(config, env));
    }
}
