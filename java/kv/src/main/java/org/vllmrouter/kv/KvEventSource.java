package org.vllmrouter.kv;

import java.util.Objects;

/**
 * Where one data-parallel rank of a worker publishes: its PUB endpoint, its replay ROUTER (null
 * when it has none) and the topic of its batches. An empty topic takes every batch the endpoint
 * sends, whatever its topic (a static source does not know it); a named topic takes exactly
 * that topic and counts the others as dropped.
 */
public record KvEventSource(String endpoint, String replayEndpoint, String topic) {

    public KvEventSource {
        Objects.requireNonNull(endpoint, "endpoint");
        topic = topic == null ? "" : topic;
    }

    public static KvEventSource of(String endpoint) {
        return new KvEventSource(endpoint, null, "");
    }
}
