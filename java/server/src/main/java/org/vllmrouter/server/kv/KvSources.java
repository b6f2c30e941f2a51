package org.vllmrouter.server.kv;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpMethod;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.logging.Logger;
import org.vllmrouter.core.config.StaticKvSources;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.kv.CacheIdentity;
import org.vllmrouter.kv.KvEventSource;
import org.vllmrouter.kv.KvEventSources;
import org.vllmrouter.kv.KvIndex;
import org.vllmrouter.kv.KvMetrics;
import org.vllmrouter.kv.KvSubscribers;
import org.vllmrouter.kv.SourceId;
import org.vllmrouter.server.worker.ControlClient;

/**
 * The worker side of kv_aware: the KV-event subscriptions that fill the index {@link KvPlacement} reads. When a
 * worker registers (start-up, /add_worker, discovery), its {@code /get_server_info} gives the cache identity (model,
 * block size) -- or, on a vLLM without that route, its {@code /metrics} and {@code /v1/models} do -- and its
 * {@code /kv_event_sources} the publishers, one subscriber per data-parallel rank; when it goes,
 * its subscribers stop and its claims with them. That runs on one small thread, never an event loop, and a failure
 * only warns: the worker then gets no prefix credit. Sources are keyed by a worker's base URL, so the data-parallel
 * ranks {@code URL@r} of one worker share them.
 */
public final class KvSources implements WorkerRegistry.Listener, AutoCloseable {
    private static final Logger LOG = Logger.getLogger(KvSources.class.getName());
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(5);

    private final ControlClient client;
    private final EventLoop control;
    private final KvIndex index;
    private final KvSubscribers subscribers;
    private final ExecutorService executor;
    /** Base URLs registered and not yet removed; a fetch that finishes after the worker left starts nothing. */
    private final Set<String> registered = ConcurrentHashMap.newKeySet();
    private final Map<String, CacheIdentity> identities = new ConcurrentHashMap<>();
    private final Map<String, StaticKvSources.Source> staticSources;
    private final CacheIdentity staticIdentity;

    /**
     * {@code staticSources}: workers whose publishers the flags name ({@code --kv-event-source}, or
     * {@code --pd-kv-events} for prefill workers); they are subscribed under {@code staticIdentity} without asking the
     * worker. Every other worker is asked. Subscribes to the workers {@code workers} holds now and to every one it
     * gets later.
     */
    public KvSources(WorkerRegistry workers, ControlClient client, EventLoop control,
                     Map<String, StaticKvSources.Source> staticSources, CacheIdentity staticIdentity,
                     PrometheusRegistry registry, KvSubscribers.Settings subscriberSettings) {
        this.client = client;
        this.control = control;
        this.staticSources = staticSources;
        this.staticIdentity = staticIdentity;
        KvMetrics metrics = new KvMetrics(registry);
        this.index = new KvIndex(KvIndex.DEFAULT_BLOCK_BUDGET, metrics);
        this.subscribers = new KvSubscribers(index, metrics, subscriberSettings);
        this.executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kv-sources");
            t.setDaemon(true);
            return t;
        });
        workers.addListener(this);
        workers.all().forEach(this::added);
    }

    /** The sources subscribed to now. */
    public List<SourceId> sources() {
        return subscribers.sources();
    }

    /** What the subscriptions have told of the workers' caches. */
    KvIndex index() {
        return index;
    }

    /** The KV blocks the worker at {@code baseUrl} holds now, as its events told (0 before any). */
    int heldBlocks(String baseUrl) {
        return subscribers.heldBlocks(baseUrl);
    }

    /** The cache identity of the worker at {@code baseUrl}; null until its sources are subscribed. */
    CacheIdentity identity(String baseUrl) {
        return identities.get(baseUrl);
    }

    @Override
    public void added(Worker worker) {
        String base = worker.baseUrl();
        if (!registered.add(base)) {
            return;
        }
        StaticKvSources.Source configured = staticSources.get(base);
        if (configured != null) {
            executor.execute(() -> subscribeStatic(base, configured));
        } else {
            get(base, "/get_server_info")
                    .thenComposeAsync(info -> identity(base, info), executor)
                    .thenCompose(identity -> get(base, "/kv_event_sources")
                            .thenApply(sources -> new WorkerReplies(identity, sources)))
                    .whenCompleteAsync((replies, error) -> subscribe(base, replies, error), executor);
        }
    }

    @Override
    public void removed(List<Worker> gone) {
        for (Worker w : gone) {
            String base = w.baseUrl();
            if (registered.remove(base)) {
                identities.remove(base);
                executor.execute(() -> subscribers.stopWorker(base));
            }
        }
    }

    /** The KV caches of {@code emptied}'s hosts were emptied: their claims are dropped (see KvSubscribers#cleared). */
    public void cacheReset(List<Worker> emptied) {
        for (Worker w : emptied) {
            String base = w.baseUrl();
            executor.execute(() -> subscribers.cleared(base));
        }
    }

    private void subscribeStatic(String base, StaticKvSources.Source configured) {
        if (!registered.contains(base)) {
            return;
        }
        List<String> endpoints = configured.endpoints();
        identities.put(base, staticIdentity);
        for (int rank = 0; rank < endpoints.size(); rank++) {
            String replay = configured.replayEndpoints().isEmpty() ? null : configured.replayEndpoints().get(rank);
            subscribers.start(new SourceId(base, rank), staticIdentity, new KvEventSource(endpoints.get(rank), replay, ""));
        }
        LOG.info("KV events of " + UrlRedaction.redact(base) + " from the flags: " + endpoints.size() + " source(s)");
    }

    private CompletableFuture<ControlClient.Reply> get(String base, String path) {
        return client.send(control, HttpMethod.GET, base, path, null, null, CONTROL_TIMEOUT);
    }

    /**
     * The cache identity from {@code /get_server_info}, or, from a vLLM without it (0.32 answers 404) or whose answer
     * has no block size, the block size of {@code /metrics} and the model of {@code /v1/models}. Runs on the executor.
     */
    private CompletableFuture<CacheIdentity> identity(String base, ControlClient.Reply info) {
        String withoutInfo;
        try {
            return CompletableFuture.completedFuture(identityFrom(base, info));
        } catch (IllegalStateException e) {
            withoutInfo = e.getMessage();
        }
        CompletableFuture<ControlClient.Reply> metrics = get(base, "/metrics");
        return get(base, "/v1/models").thenCombineAsync(metrics, (models, exposition) -> {
            try {
                return identityFromVllm(base, exposition, models);
            } catch (IllegalStateException e) {
                throw new IllegalStateException(withoutInfo + "; " + e.getMessage());
            }
        }, executor);
    }

    private record WorkerReplies(CacheIdentity identity, ControlClient.Reply sources) {
    }

    private void subscribe(String base, WorkerReplies replies, Throwable error) {
        if (!registered.contains(base)) {
            return;
        }
        try {
            if (error != null) {
                Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
                throw new IllegalStateException(cause.getMessage() == null ? cause.toString() : cause.getMessage());
            }
            CacheIdentity identity = replies.identity();
            if (!replies.sources().ok()) {
                throw new IllegalStateException("GET /kv_event_sources answered " + replies.sources().status());
            }
            Map<Integer, KvEventSource> sources = KvEventSources.parse(
                    new String(replies.sources().body(), StandardCharsets.UTF_8), URI.create(base).getHost());
            if (sources.isEmpty()) {
                LOG.warning("Worker " + UrlRedaction.redact(base) + " publishes no KV events; kv_aware gives it no prefix credit");
                return;
            }
            identities.put(base, identity);
            sources.forEach((rank, source) -> subscribers.start(new SourceId(base, rank), identity, source));
            LOG.info("KV events of " + UrlRedaction.redact(base) + " (" + identity.model() + ", block " + identity.blockSize() + "): "
                    + sources.size() + " source(s)");
        } catch (RuntimeException e) {
            LOG.warning("No KV events from " + UrlRedaction.redact(base) + ", kv_aware gives it no prefix credit: " + e.getMessage());
        }
    }

    private static CacheIdentity identityFrom(String base, ControlClient.Reply info) {
        if (!info.ok()) {
            throw new IllegalStateException("GET /get_server_info answered " + info.status());
        }
        JsonNode root;
        try {
            root = JSON.readTree(info.body());
        } catch (IOException e) {
            throw new IllegalStateException("/get_server_info is not JSON");
        }
        int blockSize = root.path("kv_block_size").asInt(0);
        if (blockSize <= 0) {
            throw new IllegalStateException("no block_size from /get_server_info, cannot index");
        }
        String model = root.path("model_id").asText("");
        if (model.isEmpty()) {
            model = root.path("model_path").asText("");
        }
        if (model.isEmpty()) {
            LOG.warning("/get_server_info of " + UrlRedaction.redact(base) + " names no model; falling back to URL as model id");
            model = base;
        }
        return new CacheIdentity(model, blockSize);
    }

    /** The identity vLLM 0.32 gives: {@code vllm:cache_config_info}'s block size, {@code /v1/models}' first id. */
    private static CacheIdentity identityFromVllm(String base, ControlClient.Reply metrics, ControlClient.Reply models) {
        if (!metrics.ok()) {
            throw new IllegalStateException("GET /metrics answered " + metrics.status());
        }
        int blockSize = CacheConfigInfo.blockSize(new String(metrics.body(), StandardCharsets.UTF_8));
        if (!models.ok()) {
            throw new IllegalStateException("GET /v1/models answered " + models.status());
        }
        JsonNode data;
        try {
            data = JSON.readTree(models.body()).path("data");
        } catch (IOException e) {
            throw new IllegalStateException("/v1/models is not JSON");
        }
        if (!data.isArray() || (!data.isEmpty() && !data.get(0).path("id").isTextual())) {
            throw new IllegalStateException("/v1/models has no data list of models with ids");
        }
        String model = data.isEmpty() ? "" : data.get(0).get("id").asText();
        if (model.isEmpty()) {
            LOG.warning("/v1/models of " + UrlRedaction.redact(base) + " names no model; falling back to URL as model id");
            model = base;
        }
        return new CacheIdentity(model, blockSize);
    }

    @Override
    public void close() {
        executor.execute(subscribers::close);
        executor.shutdown();
    }
}
