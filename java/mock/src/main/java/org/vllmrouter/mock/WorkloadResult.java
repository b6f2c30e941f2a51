package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Locale;
import java.util.Map;

/**
 * What a {@link WorkloadMain} run observed.
 *
 * @param sessionsPerWorker worker id -> sessions whose first turn it answered
 * @param turnsPerWorker    worker id -> turns it answered
 * @param stickiness        fraction of answered turns that landed on their session's first worker
 * @param cacheHitRate      cached prompt tokens / prompt tokens, over answered turns
 * @param finishFailures    {@code /finish_session} calls that did not answer 2xx
 */
public record WorkloadResult(int sessions, int turns, long requests, long errors,
                             Map<String, Integer> sessionsPerWorker, Map<String, Integer> turnsPerWorker,
                             double stickiness, double cacheHitRate, long promptTokens, long cachedTokens,
                             long p50Micros, long p99Micros, double requestsPerSecond, double durationSeconds,
                             long finishFailures) {

    public ObjectNode toJson() {
        ObjectNode o = Replies.JSON.createObjectNode();
        o.put("sessions", sessions);
        o.put("turns", turns);
        o.put("requests", requests);
        o.put("errors", errors);
        ObjectNode spw = o.putObject("sessions_per_worker");
        sessionsPerWorker.forEach(spw::put);
        ObjectNode tpw = o.putObject("turns_per_worker");
        turnsPerWorker.forEach(tpw::put);
        o.put("stickiness", stickiness);
        o.put("cache_hit_rate", cacheHitRate);
        o.put("prompt_tokens", promptTokens);
        o.put("cached_tokens", cachedTokens);
        o.put("latency_p50_ms", p50Micros / 1000.0);
        o.put("latency_p99_ms", p99Micros / 1000.0);
        o.put("requests_per_second", requestsPerSecond);
        o.put("duration_s", durationSeconds);
        o.put("finish_failures", finishFailures);
        return o;
    }

    public String toText() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "sessions %d x turns %d: %d requests, %d errors, %.1f s, %.1f req/s%n",
                sessions, turns, requests, errors, durationSeconds, requestsPerSecond));
        sb.append("sessions per worker: ").append(sessionsPerWorker).append('\n');
        sb.append("turns per worker:    ").append(turnsPerWorker).append('\n');
        sb.append(String.format(Locale.ROOT, "stickiness %.3f   prefix-cache hit rate %.3f (%d of %d prompt tokens)%n",
                stickiness, cacheHitRate, cachedTokens, promptTokens));
        sb.append(String.format(Locale.ROOT, "latency p50 %.2f ms   p99 %.2f ms%n", p50Micros / 1000.0, p99Micros / 1000.0));
        if (finishFailures > 0) {
            sb.append("finish_session failures: ").append(finishFailures).append('\n');
        }
        return sb.toString();
    }
}
