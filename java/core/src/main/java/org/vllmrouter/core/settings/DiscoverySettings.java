package org.vllmrouter.core.settings;

import java.util.Map;
import org.vllmrouter.core.config.RouterConfig;

/**
 * Workers found at run time: Kubernetes pods by selector, or vLLM instances registering over ZMQ.
 *
 * @param namespace null for every namespace
 * @param vllmDiscoveryAddress null when vLLM instances do not register
 * @param retryIntervalSecs how often a source that failed is tried again
 */
public record DiscoverySettings(boolean serviceDiscovery, Map<String, String> selector, int port, String namespace,
                                Map<String, String> prefillSelector, Map<String, String> decodeSelector,
                                String bootstrapPortAnnotation, String vllmDiscoveryAddress, boolean pdMode,
                                int retryIntervalSecs) {
    public static DiscoverySettings from(RouterConfig c) {
        return new DiscoverySettings(c.serviceDiscovery(), c.selector(), c.serviceDiscoveryPort(),
                c.serviceDiscoveryNamespace(), c.prefillSelector(), c.decodeSelector(), c.bootstrapPortAnnotation(),
                c.vllmDiscoveryAddress(), c.isPdMode(), c.workerStartupCheckInterval());
    }
}
