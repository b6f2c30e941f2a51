package org.vllmrouter.core.settings;

import java.util.Map;
import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StaticKvSources;

/**
 * kv_aware's KV events from sources named at start ({@code --kv-event-source}, {@code --kv-event-replay-source},
 * {@code --pd-kv-events}) and the cache they describe.
 *
 * @param sources by worker URL; empty when none is named
 * @param pdMode whether the sources are prefill workers' (one tree at {@link StaticKvSources#PD_BLOCK_SIZE})
 */
public record KvEventSettings(Map<String, StaticKvSources.Source> sources, String model, int blockSize,
                              boolean pdMode) {
    public static KvEventSettings from(RouterConfig c) throws ConfigException {
        return new KvEventSettings(StaticKvSources.of(c), c.kvEventModel(), c.kvEventBlockSize(), c.isPdMode());
    }
}
