package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One mock vLLM worker (one port) inside a {@link MockWorkers} process: its knobs, state and
 * what it received. Tests reach it through {@link MockWorkers#worker(int)}.
 */
public final class MockWorker {

    private final int index;
    private final Knobs knobs;
    private final PrefixCache cache;
    private final KvEventPublisher kvEvents;
    private final ModelEngine engine;
    private final ServiceSlots slots;
    private final EngineState engineState = new EngineState();
    private final ArrayDeque<CapturedRequest> captured = new ArrayDeque<>();
    private final AtomicLong requestCount = new AtomicLong();
    private final AtomicLong acceptedConnections = new AtomicLong();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final long startNanos = System.nanoTime();
    private final ChannelGroup connections;
    /** Answers of {@code POST /v1/responses}, for {@code GET /v1/responses/{id}} (latest 1000). */
    private final Map<String, ObjectNode> responses = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, ObjectNode> eldest) {
            return size() > 1000;
        }
    };
    private volatile Channel listener;
    private volatile String host;

    MockWorker(int index, Knobs knobs, ChannelGroup connections, KvEventPublisher kvEvents, ModelEngine engine) {
        this.index = index;
        this.engine = engine;
        this.knobs = knobs;
        this.connections = connections;
        this.kvEvents = kvEvents;
        this.cache = kvEvents == null ? new PrefixCache() : new PrefixCache(kvEvents::publish, kvEvents::restart);
        this.slots = new ServiceSlots(knobs::maxConcurrency);
    }

    void bound(Channel listener, String host) {
        this.listener = listener;
        this.host = host;
    }

    /** 0-based position in the process (port order). */
    public int index() { return index; }

    public int port() {
        return ((java.net.InetSocketAddress) listener.localAddress()).getPort();
    }

    public String url() {
        return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port();
    }

    /** The identity in {@code X-Worker-Id} and {@code worker_id}. */
    public String id() {
        String id = knobs.workerId();
        return id != null ? id : "worker-" + port();
    }

    /** Live knobs: changes apply to the next request. */
    public Knobs knobs() { return knobs; }

    /** Inference requests received (health, info and capture routes not counted). */
    public long requestCount() { return requestCount.get(); }

    /** TCP connections accepted so far, on any route (a client that reuses connections opens few). */
    public long acceptedConnections() { return acceptedConnections.get(); }

    /** Inference requests received and not yet fully answered (hanging ones until their connection closes). */
    public int inFlight() { return inFlight.get(); }

    /** Inference requests waiting for a slot ({@code max-concurrency}). */
    public int queued() { return slots.queued(); }

    /** Prefix-cache blocks resident on the GPU. */
    public int cacheBlocks() { return cache.size(); }

    /** Prefix-cache blocks in the CPU offload tier ({@code cpu-cache-blocks}). */
    public int cpuCacheBlocks() { return cache.cpuSize(); }

    /** The KV-event publisher ({@code kv-events}), or null when the worker publishes none. */
    public KvEventPublisher kvEvents() { return kvEvents; }

    /** The cost model serving completions ({@code engine-model}), or null when the latency knobs do. */
    ModelEngine engine() { return engine; }

    /** Cached / prompt tokens over every inference request so far. */
    public double cacheHitRate() { return cache.hitRate(); }

    public void flushCache() { cache.clear(); }

    /** Pause state and weight version, as the engine-control routes leave them. */
    public EngineState engineState() { return engineState; }

    /** Everything received so far (oldest first, at most {@code capture-limit}). */
    public synchronized List<CapturedRequest> captured() {
        return new ArrayList<>(captured);
    }

    /** What was received on one path (query ignored). */
    public List<CapturedRequest> captured(String path) {
        return captured().stream().filter(r -> r.path().equals(path)).toList();
    }

    public synchronized void clearCaptured() {
        captured.clear();
    }

    /** Closes the listener and every open connection without answering: the worker is "dead". */
    public void crash() {
        Channel l = listener;
        if (l != null) {
            l.close().syncUninterruptibly();
        }
        connections.close().syncUninterruptibly();
    }

    /** {@link #crash()} without waiting, for use on an event loop. */
    void crashNow() {
        Channel l = listener;
        if (l != null) {
            l.close();
        }
        connections.close();
    }

    public boolean isListening() {
        Channel l = listener;
        return l != null && l.isOpen();
    }

    synchronized void capture(CapturedRequest r) {
        int limit = knobs.captureLimit();
        if (limit == 0) {
            return;
        }
        captured.addLast(r);
        while (captured.size() > limit) {
            captured.removeFirst();
        }
    }

    synchronized void storeResponse(String id, ObjectNode answer) {
        responses.put(id, answer.deepCopy());
    }

    /** A copy of a stored {@code /v1/responses} answer, or null if this worker never produced it. */
    synchronized ObjectNode storedResponse(String id, boolean cancel) {
        ObjectNode r = responses.get(id);
        if (r == null) {
            return null;
        }
        if (cancel) {
            r.put("status", "cancelled");
        }
        return r.deepCopy();
    }

    /** Counts an inference request and returns its 1-based ordinal (for fail-first-n). */
    long countRequest() { return requestCount.incrementAndGet(); }

    AtomicInteger inFlightCounter() { return inFlight; }

    PrefixCache cache() { return cache; }

    ServiceSlots slots() { return slots; }

    ChannelGroup connections() { return connections; }

    void accepted() { acceptedConnections.incrementAndGet(); }

    long uptimeMillis() { return (System.nanoTime() - startNanos) / 1_000_000; }

    Channel listener() { return listener; }
}
