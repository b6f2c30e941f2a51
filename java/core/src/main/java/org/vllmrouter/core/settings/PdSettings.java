package org.vllmrouter.core.settings;

import org.vllmrouter.core.config.PdMode;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;

/**
 * Prefill/decode disaggregation: the flavour, how long a stage may take, and the key the stages send to workers.
 *
 * @param openaiApiKey sent to the PD workers when the client sent no authorization (null: none), as upstream
 */
public record PdSettings(PdMode mode, int requestTimeoutSecs, String openaiApiKey) {
    public static PdSettings from(RouterConfig c, StartEnvironment env) {
        return new PdSettings(c.pdMode(), c.requestTimeoutSecs(), env.openaiApiKey());
    }

    /** Prefill/decode disaggregation (either flavour). */
    public boolean enabled() {
        return mode != PdMode.NONE;
    }
}
