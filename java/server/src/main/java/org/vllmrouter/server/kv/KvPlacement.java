package org.vllmrouter.server.kv;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.EventLoop;
import io.netty.channel.group.ChannelGroup;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Summary;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.logging.Logger;
import org.vllmrouter.core.config.StaticKvSources;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.policy.KvAwarePolicy;
import org.vllmrouter.core.policy.PrefixResidency;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.kv.BlockKeys;
import org.vllmrouter.kv.CacheIdentity;
import org.vllmrouter.kv.KvEventSource;
import org.vllmrouter.kv.KvEventSources;
import org.vllmrouter.kv.KvIndex;
import org.vllmrouter.kv.KvMetrics;
import org.vllmrouter.kv.KvSubscribers;
import org.vllmrouter.kv.PrefixMatch;
import org.vllmrouter.kv.SourceId;
import org.vllmrouter.kv.Tier;
import org.vllmrouter.server.proxy.WorkerTls;
import org.vllmrouter.server.worker.ControlClient;

/**
 * Where the kv_aware policy's inputs come from. Worker side: when a worker registers (start-up, /add_worker,
 * discovery), its {@code /get_server_info} gives the cache identity (model, block size) and its
 * {@code /kv_event_sources} the publishers, one subscriber per data-parallel rank; when it goes, its subscribers stop
 * and its claims with them. That runs on one small thread, never an event loop, and a failure only warns: the worker
 * then gets no prefix credit. Request side: the prompt's token ids come from one candidate's render endpoint (all
 * candidates of one model tokenize alike), asynchronously with a short timeout, on keep-alive connections
 * ({@link RenderClient}); the index then says what each
 * candidate holds. A render failure leaves the choice to load alone; the request itself is forwarded unchanged.
 * Sources are keyed by a worker's base URL, so the data-parallel ranks {@code URL@r} of one worker share its
 * deepest match.
 */
public final class KvPlacement implements WorkerRegistry.Listener, AutoCloseable {
    private static final Logger LOG = Logger.getLogger(KvPlacement.class.getName());
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(5);
    /** A render call is on the request's path: past this the request is routed on load alone. */
    static final Duration RENDER_TIMEOUT = Duration.ofSeconds(2);
    private static final Map<String, String> RENDER_PATHS = Map.of(
            "/v1/completions", "/v1/completions/render",
            "/v1/chat/completions", "/v1/chat/completions/render");

    private final WorkerRegistry workers;
    private final ControlClient client;
    private final RenderClient render;
    private final EventLoop control;
    private final KvAwarePolicy.Settings credits;
    private final KvIndex index;
    private final KvSubscribers subscribers;
    private final ExecutorService executor;
    /** Base URLs registered and not yet removed; a fetch that finishes after the worker left starts nothing. */
    private final Set<String> registered = ConcurrentHashMap.newKeySet();
    private final Map<String, CacheIdentity> identities = new ConcurrentHashMap<>();
    private final Map<String, StaticKvSources.Source> staticSources;
    private final CacheIdentity staticIdentity;
    private final Counter routingInputs;
    private final Counter placementLookups;
    private final Counter decisions;
    private final Summary renderSeconds;

    /**
     * {@code staticSources}: workers whose publishers the flags name ({@code --kv-event-source}, or
     * {@code --pd-kv-events} for prefill workers); they are subscribed under {@code staticIdentity} without asking the
     * worker. Every other worker is asked.
     */
    public KvPlacement(WorkerRegistry workers, ControlClient client, WorkerTls tls, ChannelGroup connections,
                       EventLoop control,
                       KvAwarePolicy.Settings credits,
                       Map<String, StaticKvSources.Source> staticSources, CacheIdentity staticIdentity,
                       PrometheusRegistry registry, KvSubscribers.Settings subscriberSettings) {
        this.workers = workers;
        this.client = client;
        this.render = new RenderClient(tls, connections);
        this.staticSources = staticSources;
        this.staticIdentity = staticIdentity;
        this.control = control;
        this.credits = credits;
        KvMetrics metrics = new KvMetrics(registry);
        this.index = new KvIndex(KvIndex.DEFAULT_BLOCK_BUDGET, metrics);
        this.subscribers = new KvSubscribers(index, metrics, subscriberSettings);
        this.executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kv-sources");
            t.setDaemon(true);
            return t;
        });
        this.routingInputs = Counter.builder().name("vllm_router_kv_routing_inputs_total")
                .help("Token inputs looked for by kv_aware, by transport and result")
                .labelNames("transport", "result").withoutExemplars().register(registry);
        this.placementLookups = Counter.builder().name("vllm_router_kv_placement_lookups_total")
                .help("KV index lookups for a request: hit when a candidate holds a prefix")
                .labelNames("result").withoutExemplars().register(registry);
        this.decisions = Counter.builder().name("vllm_router_prefix_routing_decisions_total")
                .help("kv_aware decisions, by policy, stage and outcome")
                .labelNames("policy", "stage", "outcome").withoutExemplars().register(registry);
        this.renderSeconds = Summary.builder().name("vllm_router_kv_render_seconds")
                .help("The render call kv_aware makes before placing a request, answered or not")
                .quantile(0.5, 0.01).quantile(0.99, 0.001).withoutExemplars().register(registry);
        workers.addListener(this);
        workers.all().forEach(this::added);
    }

    /** The sources subscribed to now. */
    public List<SourceId> sources() {
        return subscribers.sources();
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
            client.send(control, HttpMethod.GET, base, "/get_server_info", null, null, CONTROL_TIMEOUT)
                    .thenCompose(info -> client.send(control, HttpMethod.GET, base, "/kv_event_sources", null,
                                    null, CONTROL_TIMEOUT)
                            .thenApply(sources -> new WorkerReplies(info, sources)))
                    .whenCompleteAsync((replies, error) -> subscribe(base, replies, error), executor);
        }
    }

    @Override
    public void removed(List<Worker> gone) {
        for (Worker w : gone) {
            String base = w.baseUrl();
            if (registered.remove(base)) {
                identities.remove(base);
                render.forget(base);
                executor.execute(() -> subscribers.stopWorker(base));
            }
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

    private record WorkerReplies(ControlClient.Reply info, ControlClient.Reply sources) {
    }

    private void subscribe(String base, WorkerReplies replies, Throwable error) {
        if (!registered.contains(base)) {
            return;
        }
        try {
            if (error != null) {
                throw new IllegalStateException(error.getMessage() == null ? error.toString() : error.getMessage());
            }
            CacheIdentity identity = identity(base, replies.info());
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

    private static CacheIdentity identity(String base, ControlClient.Reply info) {
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

    /**
     * What the candidates of {@code role} (regular, or prefill in PD mode) for {@code model} hold of the request's
     * prompt, on {@code loop} (the client's, so the caller continues there). Never fails: without tokens the answer is
     * {@link PrefixResidency#UNKNOWN}-like.
     */
    public CompletableFuture<PrefixResidency> residency(EventLoop loop, String route, FullHttpRequest request,
                                                        String model, WorkerRole role) {
        String stage = role == WorkerRole.PREFILL ? "prefill" : "regular";
        List<Worker> candidates = workers.candidates(model, role);
        String renderPath = RENDER_PATHS.get(route);
        Worker renderer = candidates.stream().filter(w -> identities.containsKey(w.baseUrl())).findFirst()
                .orElse(null);
        if (renderPath == null || renderer == null) {
            routingInputs.labelValues("http", renderPath == null ? "unsupported_route" : "no_sources").inc();
            return CompletableFuture.completedFuture(new Residency(stage, 0, Map.of()));
        }
        HttpHeaders headers = new DefaultHttpHeaders();
        String auth = request.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (auth != null) {
            headers.set(HttpHeaderNames.AUTHORIZATION, auth);
        }
        byte[] body = ByteBufUtil.getBytes(request.content());
        long started = System.nanoTime();
        return render.post(loop, renderer.baseUrl(), renderPath, headers, body, RENDER_TIMEOUT)
                .handle((reply, error) -> {
                    renderSeconds.observe((System.nanoTime() - started) / 1e9);
                    int[] tokens = error == null ? renderedTokens(reply) : null;
                    if (tokens == null || tokens.length == 0) {
                        routingInputs.labelValues("http", "render_failed").inc();
                        return new Residency(stage, 0, Map.of());
                    }
                    routingInputs.labelValues("http", "tokens").inc();
                    return lookup(stage, tokens, candidates);
                });
    }

    /** The token ids of the first prompt of a render answer (a list for completions, one object for chat). */
    private static int[] renderedTokens(ControlClient.Reply reply) {
        if (!reply.ok()) {
            return null;
        }
        try {
            JsonNode root = JSON.readTree(reply.body());
            JsonNode first = root != null && root.isArray() ? root.path(0) : root;
            JsonNode ids = first == null ? null : first.get("token_ids");
            if (ids == null || !ids.isArray()) {
                return null;
            }
            int[] tokens = new int[ids.size()];
            for (int i = 0; i < tokens.length; i++) {
                if (!ids.get(i).canConvertToInt()) {
                    return null;
                }
                tokens[i] = ids.get(i).intValue();
            }
            return tokens;
        } catch (IOException e) {
            return null;
        }
    }

    private Residency lookup(String stage, int[] tokens, List<Worker> candidates) {
        Map<CacheIdentity, List<String>> byIdentity = new LinkedHashMap<>();
        for (Worker w : candidates) {
            CacheIdentity id = identities.get(w.baseUrl());
            if (id != null) {
                List<String> bases = byIdentity.computeIfAbsent(id, k -> new ArrayList<>());
                if (!bases.contains(w.baseUrl())) {
                    bases.add(w.baseUrl());
                }
            }
        }
        Map<String, Integer> credited = new HashMap<>();
        byIdentity.forEach((identity, bases) -> {
            int block = identity.blockSize();
            PrefixMatch match = index.match(identity, BlockKeys.of(tokens, block, null), bases);
            int cap = (tokens.length - 1) / block * block;
            for (int i = 0; i < bases.size(); i++) {
                double blocks = match.blocksAtOrFaster(i, Tier.DEVICE)
                        + credits.creditHost() * tierOnly(match, i, Tier.HOST)
                        + credits.creditExternal() * tierOnly(match, i, Tier.EXTERNAL)
                        + credits.creditDisk() * tierOnly(match, i, Tier.DISK);
                credited.put(bases.get(i), (int) Math.min(cap, Math.floor(blocks * block)));
            }
        });
        boolean hit = credited.values().stream().anyMatch(c -> c > 0);
        placementLookups.labelValues(hit ? "hit" : "miss").inc();
        return new Residency(stage, tokens.length, credited);
    }

    /** Leading blocks whose fastest copy is in {@code tier}: the prefix grows by them once that tier counts. */
    private static int tierOnly(PrefixMatch match, int i, Tier tier) {
        return match.blocksAtOrFaster(i, tier) - match.blocksAtOrFaster(i, Tier.values()[tier.ordinal() - 1]);
    }

    private final class Residency implements PrefixResidency {
        private final String stage;
        private final int inputTokens;
        private final Map<String, Integer> credited;

        Residency(String stage, int inputTokens, Map<String, Integer> credited) {
            this.stage = stage;
            this.inputTokens = inputTokens;
            this.credited = credited;
        }

        @Override
        public int inputTokens() {
            return inputTokens;
        }

        @Override
        public int creditedTokens(Worker worker) {
            return credited.getOrDefault(worker.baseUrl(), 0);
        }

        @Override
        public void decided(Worker worker, String outcome) {
            decisions.labelValues("kv_aware", stage, outcome).inc();
        }
    }

    @Override
    public void close() {
        executor.execute(subscribers::close);
        executor.shutdown();
        render.close();
    }
}
