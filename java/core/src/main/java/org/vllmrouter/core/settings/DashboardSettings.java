package org.vllmrouter.core.settings;

import org.vllmrouter.core.config.RouterConfig;

/** What the dashboard shows of the configuration: the default policy and whether the router runs PD. */
public record DashboardSettings(String policy, boolean pdMode) {
    public static DashboardSettings from(RouterConfig c) {
        return new DashboardSettings(c.policy(), c.isPdMode());
    }
}
