package org.vllmrouter.server.worker;

import org.vllmrouter.core.policy.LiveLoad;

/**
 * Reads a worker's load from its Prometheus text ({@code GET /metrics}): the engine's queue, its running batch and its
 * KV cache use, under vLLM's names (and the older name of the cache gauge). Series of several engines (label
 * {@code engine}) add up, except the cache, where the fullest engine counts.
 */
final class VllmLoadMetrics {
    static final String WAITING = "vllm:num_requests_waiting";
    static final String RUNNING = "vllm:num_requests_running";
    static final String KV_CACHE_USAGE = "vllm:kv_cache_usage_perc";
    static final String GPU_CACHE_USAGE = "vllm:gpu_cache_usage_perc";

    private VllmLoadMetrics() {
    }

    /**
     * The sample in {@code text}, or null when it reports neither a queue nor a running batch, or a series of those
     * names has a value that is not a finite number (the whole scrape is then not trusted).
     */
    static LiveLoad.Sample parse(String text) {
        double waiting = 0;
        double running = 0;
        double cache = Double.NaN;
        boolean found = false;
        for (String line : text.split("\n")) {
            if (line.isEmpty() || line.charAt(0) == '#') {
                continue;
            }
            String name = nameOf(line);
            boolean queue = name.equals(WAITING);
            boolean batch = name.equals(RUNNING);
            boolean kv = name.equals(KV_CACHE_USAGE) || name.equals(GPU_CACHE_USAGE);
            if (!queue && !batch && !kv) {
                continue;
            }
            double value = valueOf(line);
            if (!Double.isFinite(value)) {
                return null;
            }
            if (queue) {
                waiting += value;
                found = true;
            } else if (batch) {
                running += value;
                found = true;
            } else {
                cache = Double.isNaN(cache) ? value : Math.max(cache, value);
            }
        }
        return found ? new LiveLoad.Sample(waiting, running, cache) : null;
    }

    private static String nameOf(String line) {
        int end = 0;
        while (end < line.length() && line.charAt(end) != '{' && line.charAt(end) != ' ') {
            end++;
        }
        return line.substring(0, end);
    }

    /** The sample value: the first field after the labels (a timestamp may follow it). */
    private static double valueOf(String line) {
        int close = line.lastIndexOf('}');
        String rest = (close >= 0 ? line.substring(close + 1) : line.substring(nameOf(line).length())).trim();
        int space = rest.indexOf(' ');
        String value = space < 0 ? rest : rest.substring(0, space);
        try {
            return Double.parseDouble(value);
        } catch (NumberFormatException malformed) {
            return Double.NaN;
        }
    }
}
