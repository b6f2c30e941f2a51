package org.vllmrouter.core.policy;

/**
 * What the workers say of their own load (vLLM's {@code /metrics}), as last gathered off the routing path: a policy
 * reads it and never waits for it. A worker with no fresh sample has none, and the policy decides without it.
 */
@FunctionalInterface
public interface LiveLoad {
    LiveLoad NONE = baseUrl -> null;

    /** The last fresh sample of the worker at {@code baseUrl} (DP ranks share it), or null. */
    Sample of(String baseUrl);

    /**
     * @param waiting requests queued by the engine ({@code vllm:num_requests_waiting}, summed over engines)
     * @param running requests in the running batch ({@code vllm:num_requests_running}, summed)
     * @param kvCacheUsage the fullest engine's KV cache use, 0 to 1 ({@code vllm:kv_cache_usage_perc}, formerly
     *     {@code vllm:gpu_cache_usage_perc}); NaN when not reported
     */
    record Sample(double waiting, double running, double kvCacheUsage) {
    }
}
