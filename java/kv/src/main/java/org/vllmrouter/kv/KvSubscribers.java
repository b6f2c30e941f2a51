package org.vllmrouter.kv;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.zeromq.ZContext;

/**
 * The router's KV-event subscribers: one thread and one SUB socket per source (worker,
 * data-parallel rank), all sharing one ZeroMQ context. Nothing here runs on a Netty event loop.
 * Stopping a source releases its claims.
 *
 * <pre>{@code
 * KvSubscribers subs = new KvSubscribers(index, metrics, KvSubscribers.Settings.DEFAULTS);
 * subs.start(new SourceId(url, 0), identity, new KvEventSource("tcp://w1:5557", "tcp://w1:5558", ""));
 * subs.stopWorker(url);   // the worker went away: every rank stops, its claims go
 * }</pre>
 */
public final class KvSubscribers implements AutoCloseable {

    /**
     * @param receiveHwm messages the SUB socket queues before ZeroMQ drops (vLLM's default hwm)
     * @param replayDeadline how long a replay may take before the missed batches are given up
     * @param maxPayloadBytes larger batches are rejected
     * @param maxEvents batches with more events are rejected
     * @param warningInterval at most one warning per rejection reason and source in this time
     */
    public record Settings(int receiveHwm, Duration replayDeadline, int maxPayloadBytes, int maxEvents,
                           Duration warningInterval) {
        public static final Settings DEFAULTS = new Settings(100_000, Duration.ofSeconds(5),
                EventBatchDecoder.DEFAULT_MAX_PAYLOAD_BYTES, EventBatchDecoder.DEFAULT_MAX_EVENTS, Duration.ofSeconds(30));

        public Settings withReplayDeadline(Duration d) {
            return new Settings(receiveHwm, d, maxPayloadBytes, maxEvents, warningInterval);
        }
    }

    private static final long STOP_WAIT_MS = 5_000;

    private final KvIndex index;
    private final KvMetrics metrics;
    private final Settings settings;
    private final ZContext context = new ZContext(1);
    private final Map<SourceId, Running> running = new ConcurrentHashMap<>();

    private record Running(KvSubscriber subscriber, Thread thread) {}

    public KvSubscribers(KvIndex index, KvMetrics metrics, Settings settings) {
        this.index = index;
        this.metrics = metrics;
        this.settings = settings;
    }

    /**
     * Starts the subscriber of {@code source}, replacing (and first stopping) one that runs
     * for it already, e.g. after the worker reported new endpoints.
     */
    public synchronized void start(SourceId source, CacheIdentity identity, KvEventSource endpoints) {
        stop(source);
        SourceClaims claims = index.claims(identity, source);
        KvSubscriber subscriber = new KvSubscriber(context, source, endpoints, claims, metrics, settings);
        Thread thread = Thread.ofPlatform().name("kv-events-" + source).daemon().unstarted(subscriber);
        running.put(source, new Running(subscriber, thread));
        thread.start();
    }

    /** Stops one source and waits for its claims to be released. No-op when it does not run. */
    public synchronized void stop(SourceId source) {
        Running r = running.remove(source);
        if (r == null) {
            return;
        }
        r.subscriber().stop();
        try {
            r.thread().join(STOP_WAIT_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops every rank of {@code worker} (it left the registry). */
    public synchronized void stopWorker(String worker) {
        for (SourceId s : List.copyOf(running.keySet())) {
            if (s.worker().equals(worker)) {
                stop(s);
            }
        }
    }

    /**
     * The worker's caches were emptied by a call the router relayed (a prefix-cache reset): every rank's claims are
     * dropped now, without waiting for the worker's own {@code AllBlocksCleared} event, which may come later or not
     * at all. Claims the worker publishes afterwards are taken as usual.
     */
    public void cleared(String worker) {
        running.forEach((source, r) -> {
            if (source.worker().equals(worker)) {
                r.subscriber().claims().cleared();
            }
        });
    }

    /** The KV blocks {@code worker}'s sources (every rank) hold now, whatever prompts they belong to. */
    public int heldBlocks(String worker) {
        int held = 0;
        for (Map.Entry<SourceId, Running> e : running.entrySet()) {
            if (e.getKey().worker().equals(worker)) {
                held += e.getValue().subscriber().claims().blocks();
            }
        }
        return held;
    }

    /** The sources with a running subscriber. */
    public List<SourceId> sources() {
        return List.copyOf(running.keySet());
    }

    @Override
    public synchronized void close() {
        for (SourceId s : List.copyOf(running.keySet())) {
            stop(s);
        }
        context.close();
    }
}
