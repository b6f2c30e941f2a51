package org.vllmrouter.kv;

import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The KV-event and index metrics, registered in a registry the router owns (one
 * {@code KvMetrics} per registry). Per-source series carry {@code worker} and {@code dp_rank}.
 */
public final class KvMetrics {

    private final PrometheusRegistry registry;
    private final Counter batches;
    private final Counter rejected;
    private final Counter events;
    private final Counter skipped;
    private final Counter dropped;
    private final Counter gaps;
    private final Counter replays;
    private final Counter restarts;
    private final Counter evicted;
    private final Counter refused;
    private final ConcurrentHashMap<SourceId, Source> sources = new ConcurrentHashMap<>();

    public KvMetrics(PrometheusRegistry registry) {
        this.registry = registry;
        batches = counter("vllm_router_kv_event_batches_total",
                "KV event batches taken in, by how (applied live, replayed, duplicate of one already applied)", "result");
        rejected = counter("vllm_router_kv_event_batches_rejected_total",
                "KV event batches rejected whole as malformed; the source's claims were kept", "reason");
        events = counter("vllm_router_kv_events_applied_total", "KV events applied to the index", "type");
        skipped = counter("vllm_router_kv_events_skipped_total",
                "KV events of good batches that the index cannot use", "reason");
        dropped = counter("vllm_router_kv_messages_dropped_total",
                "Messages received on a KV event socket and not taken in", "reason");
        gaps = counter("vllm_router_kv_sequence_gaps_total", "KV event sequence gaps seen (each starts a replay)");
        replays = counter("vllm_router_kv_replays_total", "Replay requests after a gap, by outcome", "result");
        restarts = counter("vllm_router_kv_publisher_restarts_total",
                "KV publishers seen starting over (sequence number went down); their claims were cleared");
        evicted = Counter.builder().name("vllm_router_kv_index_evicted_claims_total")
                .help("Claims given up because the index block budget was spent").withoutExemplars().register(registry);
        refused = Counter.builder().name("vllm_router_kv_index_refused_blocks_total")
                .help("Stored blocks not indexed because the block budget was spent").withoutExemplars().register(registry);
    }

    private Counter counter(String name, String help, String... extraLabels) {
        String[] labels = new String[extraLabels.length + 2];
        labels[0] = "worker";
        labels[1] = "dp_rank";
        System.arraycopy(extraLabels, 0, labels, 2, extraLabels.length);
        return Counter.builder().name(name).help(help).labelNames(labels).withoutExemplars().register(registry);
    }

    void watch(KvIndex index) {
        GaugeWithCallback.builder().name("vllm_router_kv_index_blocks")
                .help("Blocks held by at least one worker, over all models")
                .callback(cb -> cb.call(index.blocks())).register(registry);
        GaugeWithCallback.builder().name("vllm_router_kv_index_block_budget")
                .help("Blocks the index may hold; at the budget, sources give up their oldest claims")
                .callback(cb -> cb.call(index.blockBudget())).register(registry);
    }

    void evictedClaims(long n) {
        evicted.inc(n);
    }

    void refusedBlocks(long n) {
        refused.inc(n);
    }

    Source source(SourceId id) {
        return sources.computeIfAbsent(id, Source::new);
    }

    /** Why a batch was rejected whole. */
    public enum Rejection {
        /** Not msgpack at all, or cut short. */
        NOT_MSGPACK,
        /** Not the three frames {@code [topic, seq, payload]}, or a sequence frame that is not 8 bytes. */
        BAD_FRAMES,
        /** Not {@code [ts, events, rank?]}: a map, a wrong length, a ts that is not a number. */
        BAD_BATCH,
        /** An event type vLLM does not define. */
        UNKNOWN_EVENT,
        /** A required field of an event is absent. */
        MISSING_FIELD,
        /** A field of the wrong type, a repeated key, a token id out of range. */
        BAD_FIELD,
        /** A block hash that is neither an integer nor bytes, or an empty hash list. */
        BAD_HASH,
        /** Bytes after the batch. */
        TRAILING_BYTES,
        /** Over the payload or event-count limit. */
        TOO_LARGE;

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** The resolved data points of one source: its subscriber thread counts without lookups. */
    final class Source {
        final CounterDataPoint applied;
        final CounterDataPoint replayed;
        final CounterDataPoint duplicate;
        final CounterDataPoint stored;
        final CounterDataPoint removed;
        final CounterDataPoint cleared;
        final CounterDataPoint topicMismatch;
        final CounterDataPoint gap;
        final CounterDataPoint restart;
        private final String worker;
        private final String rank;
        private final Map<Rejection, CounterDataPoint> rejections = new EnumMap<>(Rejection.class);
        private final Map<String, CounterDataPoint> skips = new ConcurrentHashMap<>();
        private final Map<String, CounterDataPoint> replayResults = new ConcurrentHashMap<>();

        Source(SourceId id) {
            worker = id.worker();
            rank = Integer.toString(id.rank());
            applied = batches.labelValues(worker, rank, "applied");
            replayed = batches.labelValues(worker, rank, "replayed");
            duplicate = batches.labelValues(worker, rank, "duplicate");
            stored = events.labelValues(worker, rank, "stored");
            removed = events.labelValues(worker, rank, "removed");
            cleared = events.labelValues(worker, rank, "cleared");
            topicMismatch = dropped.labelValues(worker, rank, "topic");
            gap = gaps.labelValues(worker, rank);
            restart = restarts.labelValues(worker, rank);
            for (Rejection r : Rejection.values()) {
                rejections.put(r, rejected.labelValues(worker, rank, r.label()));
            }
        }

        void rejected(Rejection reason) {
            rejections.get(reason).inc();
        }

        void skipped(String reason) {
            skips.computeIfAbsent(reason, r -> skipped.labelValues(worker, rank, r)).inc();
        }

        void replay(String result) {
            replayResults.computeIfAbsent(result, r -> replays.labelValues(worker, rank, r)).inc();
        }
    }
}
