package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Locale;

/**
 * What a worker reports of its load and cache: {@code GET /metrics} under vLLM's metric names (from the engine model
 * when it runs one, else from the request counters and the prefix-cache stand-in), and {@code GET /engine_stats},
 * the engine model's totals that a rollout run reads at its end.
 */
final class EngineMetrics {
    private EngineMetrics() {
    }

    static String prometheus(MockWorker worker) {
        String labels = "{model_name=\"" + worker.knobs().model().replace("\\", "\\\\").replace("\"", "\\\"") + "\"}";
        StringBuilder sb = new StringBuilder();
        ModelEngine engine = worker.engine();
        // As vLLM 0.32 reports its cache's block size (where a router that finds no /get_server_info reads it) and
        // its KV blocks (where the rollout bench's real-vLLM arm reads the workers' capacity).
        sb.append("# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"")
                .append(engine == null ? worker.knobs().blockSize() : engine.blockSize())
                .append("\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",num_gpu_blocks=\"")
                .append(engine == null ? worker.knobs().cacheBlocks() : engine.capacityTokens() / engine.blockSize())
                .append("\"} 1.0\n");
        if (engine == null) {
            double usage = worker.knobs().cacheBlocks() == 0 ? 0
                    : (double) worker.cacheBlocks() / worker.knobs().cacheBlocks();
            gauge(sb, "vllm:num_requests_running", "Requests in model execution batches", labels, worker.inFlight());
            gauge(sb, "vllm:num_requests_waiting", "Requests waiting to be processed", labels, worker.queued());
            gauge(sb, "vllm:kv_cache_usage_perc", "KV-cache usage, 1 means 100 percent", labels, usage);
            return sb.toString();
        }
        ModelEngine.Stats s = engine.stats();
        gauge(sb, "vllm:num_requests_running", "Requests in model execution batches", labels, s.running());
        gauge(sb, "vllm:num_requests_waiting", "Requests waiting to be processed", labels, s.waiting());
        gauge(sb, "vllm:kv_cache_usage_perc", "KV-cache usage, 1 means 100 percent", labels,
                (double) s.usedBlocks() / s.capacityBlocks());
        counter(sb, "vllm:prefix_cache_queries", "Prefix-cache queries, in prompt tokens", labels, s.promptTokens());
        counter(sb, "vllm:prefix_cache_hits", "Prefix-cache hits, in prompt tokens", labels, s.hitTokens());
        counter(sb, "vllm:num_preemptions", "Cumulative number of preemptions", labels, s.preemptions());
        return sb.toString();
    }

    static ObjectNode stats(MockWorker worker) {
        ModelEngine.Stats s = worker.engine().stats();
        ObjectNode o = Replies.JSON.createObjectNode();
        o.put("worker_id", worker.id());
        o.put("kv_blocks", s.capacityBlocks());
        o.put("running", s.running());
        o.put("waiting", s.waiting());
        o.put("busy_seconds", s.busySeconds());
        o.put("steps", s.steps());
        o.put("prompt_tokens", s.promptTokens());
        o.put("hit_tokens", s.hitTokens());
        o.put("preemptions", s.preemptions());
        o.put("recomputed_tokens", s.recomputedTokens());
        o.put("aborted", s.aborted());
        o.put("peak_used_blocks", s.peakUsedBlocks());
        o.put("fell_behind", s.fellBehind());
        o.put("behind_seconds", s.behindSeconds());
        return o;
    }

    private static void gauge(StringBuilder sb, String name, String help, String labels, double value) {
        sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
        sb.append("# TYPE ").append(name).append(" gauge\n");
        sb.append(name).append(labels).append(' ').append(number(value)).append('\n');
    }

    private static void counter(StringBuilder sb, String name, String help, String labels, long value) {
        sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
        sb.append("# TYPE ").append(name).append(" counter\n");
        sb.append(name).append("_total").append(labels).append(' ').append(value).append('\n');
    }

    private static String number(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : String.format(Locale.ROOT, "%.6f", v);
    }
}
