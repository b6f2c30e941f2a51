package org.vllmrouter.kv;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a worker's {@code GET /kv_event_sources} answer into one {@link KvEventSource} per
 * data-parallel rank. Every shape vLLM has used is accepted: the per-rank map
 * {@code {"0": {...}}}, a bare list {@code [{...}]} and {@code {"sources": [...]}} (in a list,
 * the rank is the entry's {@code data_parallel_rank}, {@code dp_rank} or {@code rank}, else its
 * position). Anything else is an {@link IllegalArgumentException} with a one-line reason, never a
 * silent "no sources". A bind-style endpoint ({@code tcp://*:5557}, {@code 0.0.0.0}, {@code [::]})
 * is reached at the worker's own host.
 */
public final class KvEventSources {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern TCP = Pattern.compile("tcp://(\\[[^\\]]*\\]|[^:/\\[\\]]+):(\\d+)");

    private KvEventSources() {}

    /**
     * @param body the response body
     * @param workerHost the host of the worker's URL, for wildcard endpoints
     * @return sources by rank, in rank order; empty when the worker publishes no events
     */
    public static Map<Integer, KvEventSource> parse(String body, String workerHost) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("kv_event_sources is not JSON: " + e.getOriginalMessage());
        }
        Map<Integer, KvEventSource> out = new TreeMap<>();
        if (root != null && root.isObject() && root.has("sources")) {
            root = root.get("sources");
        }
        if (root != null && root.isArray()) {
            for (int i = 0; i < root.size(); i++) {
                JsonNode entry = root.get(i);
                add(out, rankOf(entry, i), entry, workerHost);
            }
        } else if (root != null && root.isObject()) {
            for (Map.Entry<String, JsonNode> e : root.properties()) {
                int rank;
                try {
                    rank = Integer.parseInt(e.getKey());
                } catch (NumberFormatException ex) {
                    throw new IllegalArgumentException("kv_event_sources: key '" + e.getKey()
                            + "' is not a data-parallel rank (expected {\"0\": {\"endpoint\": ...}})");
                }
                add(out, rank, e.getValue(), workerHost);
            }
        } else {
            throw new IllegalArgumentException("kv_event_sources: expected a map of ranks, a list or {\"sources\": [...]}");
        }
        return out;
    }

    private static int rankOf(JsonNode entry, int position) {
        for (String field : new String[] {"data_parallel_rank", "dp_rank", "rank"}) {
            if (entry.path(field).canConvertToInt()) {
                return entry.get(field).intValue();
            }
        }
        return position;
    }

    private static void add(Map<Integer, KvEventSource> out, int rank, JsonNode entry, String workerHost) {
        if (rank < 0) {
            throw new IllegalArgumentException("kv_event_sources: rank " + rank + " is negative");
        }
        if (!entry.isObject()) {
            throw new IllegalArgumentException("kv_event_sources: rank " + rank + " is not an object");
        }
        if (!entry.path("enable_kv_cache_events").asBoolean(true)) {
            return;
        }
        String publisher = entry.path("publisher").asText("zmq");
        if (!publisher.equals("zmq")) {
            throw new IllegalArgumentException("kv_event_sources: rank " + rank + " publishes with '" + publisher
                    + "'; only zmq is supported");
        }
        String encoding = entry.path("encoding").asText("msgpack");
        if (!encoding.equals("msgpack")) {
            throw new IllegalArgumentException("kv_event_sources: rank " + rank + " encodes with '" + encoding
                    + "'; only msgpack is supported");
        }
        if (!entry.path("endpoint").isTextual()) {
            throw new IllegalArgumentException("kv_event_sources: rank " + rank + " has no endpoint");
        }
        String endpoint = reachable(entry.get("endpoint").asText(), workerHost);
        JsonNode replay = entry.get("replay_endpoint");
        String replayEndpoint = replay == null || replay.isNull() || replay.asText().isEmpty()
                ? null : reachable(replay.asText(), workerHost);
        if (out.put(rank, new KvEventSource(endpoint, replayEndpoint, entry.path("topic").asText(""))) != null) {
            throw new IllegalArgumentException("kv_event_sources: rank " + rank + " appears twice");
        }
    }

    /** {@code tcp://HOST:PORT} with a wildcard or unspecified host replaced by the worker's. */
    static String reachable(String endpoint, String workerHost) {
        Matcher m = TCP.matcher(endpoint);
        if (!m.matches()) {
            throw new IllegalArgumentException("kv_event_sources: endpoint '" + endpoint + "' is not tcp://HOST:PORT");
        }
        String host = m.group(1);
        boolean wildcard = host.equals("*") || host.equals("0.0.0.0") || host.equals("[::]") || host.equals("[0:0:0:0:0:0:0:0]");
        if (!wildcard) {
            return endpoint;
        }
        String h = workerHost.contains(":") && !workerHost.startsWith("[") ? "[" + workerHost + "]" : workerHost;
        return "tcp://" + h + ":" + m.group(2);
    }
}
