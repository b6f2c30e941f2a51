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
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Summary;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.vllmrouter.core.policy.KvAwarePolicy;
import org.vllmrouter.core.policy.PrefixResidency;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.kv.BlockKeys;
import org.vllmrouter.kv.CacheIdentity;
import org.vllmrouter.kv.PrefixMatch;
import org.vllmrouter.kv.Tier;
import org.vllmrouter.server.proxy.WorkerTls;
import org.vllmrouter.server.trace.RequestSpan;
import org.vllmrouter.server.trace.WorkerCallSpan;
import org.vllmrouter.server.worker.ControlClient;

/**
 * The request side of kv_aware: what the candidates of a request hold of its prompt, asked at routing time. The
 * prompt's token ids come from one candidate's render endpoint (all candidates of one model tokenize alike),
 * asynchronously with a short timeout, on keep-alive connections ({@link RenderClient}); the index the
 * {@link KvSources} subscriptions fill then says what each candidate holds. A render failure leaves the choice to
 * load alone; the request itself is forwarded unchanged. The data-parallel ranks {@code URL@r} of one worker share
 * its deepest match.
 */
public final class KvPlacement implements WorkerRegistry.Listener, AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A render call is on the request's path: past this the request is routed on load alone. */
    static final Duration RENDER_TIMEOUT = Duration.ofSeconds(2);
    private static final Map<String, String> RENDER_PATHS = Map.of(
            "/v1/completions", "/v1/completions/render",
            "/v1/chat/completions", "/v1/chat/completions/render");

    private final WorkerRegistry workers;
    private final KvSources sources;
    private final RenderClient render;
    private final KvAwarePolicy.Settings credits;
    private final Counter routingInputs;
    private final Counter placementLookups;
    private final Counter decisions;
    private final Summary renderSeconds;

    /** Looks up what {@code sources} found; {@code credits} weigh the tiers below the device's. */
    public KvPlacement(KvSources sources, WorkerRegistry workers, WorkerTls tls, ChannelGroup connections,
                       KvAwarePolicy.Settings credits, PrometheusRegistry registry) {
        this.workers = workers;
        this.sources = sources;
        this.render = new RenderClient(tls, connections);
        this.credits = credits;
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
    }

    /** A worker's render connections are of no more use once it has gone. */
    @Override
    public void added(Worker worker) {
    }

    @Override
    public void removed(List<Worker> gone) {
        for (Worker w : gone) {
            render.forget(w.baseUrl());
        }
    }

    /** The KV caches of {@code emptied} were reset: the index forgets what they held. */
    public void cacheReset(List<Worker> emptied) {
        sources.cacheReset(emptied);
    }

    /**
     * What the candidates of {@code role} (regular, or prefill in PD mode) for {@code model} hold of the request's
     * prompt, on {@code loop} (the client's, so the caller continues there); the render call is a client span of
     * {@code span}. Never fails: without tokens the answer is {@link PrefixResidency#UNKNOWN}-like.
     */
    public CompletableFuture<PrefixResidency> residency(EventLoop loop, String route, FullHttpRequest request,
                                                        String model, WorkerRole role, RequestSpan span) {
        String stage = role == WorkerRole.PREFILL ? "prefill" : "regular";
        List<Worker> candidates = workers.candidates(model, role);
        String renderPath = RENDER_PATHS.get(route);
        Worker renderer = candidates.stream().filter(w -> sources.identity(w.baseUrl()) != null).findFirst()
                .orElse(null);
        if (renderPath == null || renderer == null) {
            routingInputs.labelValues("http", renderPath == null ? "unsupported_route" : "no_sources").inc();
            return CompletableFuture.completedFuture(new Residency(stage, 0, Map.of(), Map.of()));
        }
        HttpHeaders headers = new DefaultHttpHeaders();
        String auth = request.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (auth != null) {
            headers.set(HttpHeaderNames.AUTHORIZATION, auth);
        }
        byte[] body = ByteBufUtil.getBytes(request.content());
        long started = System.nanoTime();
        WorkerCallSpan call = span.workerCall("render", renderer.shownUrl(), "POST", renderPath, headers);
        return render.post(loop, renderer.baseUrl(), renderPath, headers, body, RENDER_TIMEOUT)
                .handle((reply, error) -> {
                    renderSeconds.observe((System.nanoTime() - started) / 1e9);
                    if (reply != null) {
                        call.status(reply.status());
                    }
                    call.end(error);
                    int[] tokens = error == null ? renderedTokens(reply) : null;
                    if (tokens == null || tokens.length == 0) {
                        routingInputs.labelValues("http", "render_failed").inc();
                        return new Residency(stage, 0, Map.of(), Map.of());
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
            CacheIdentity id = sources.identity(w.baseUrl());
            if (id != null) {
                List<String> bases = byIdentity.computeIfAbsent(id, k -> new ArrayList<>());
                if (!bases.contains(w.baseUrl())) {
                    bases.add(w.baseUrl());
                }
            }
        }
        Map<String, Integer> credited = new HashMap<>();
        Map<String, Integer> held = new HashMap<>();
        byIdentity.forEach((identity, bases) -> {
            int block = identity.blockSize();
            PrefixMatch match = sources.index().match(identity, BlockKeys.of(tokens, block, null), bases);
            int cap = (tokens.length - 1) / block * block;
            for (int i = 0; i < bases.size(); i++) {
                double blocks = match.blocksAtOrFaster(i, Tier.DEVICE)
                        + credits.creditHost() * tierOnly(match, i, Tier.HOST)
                        + credits.creditExternal() * tierOnly(match, i, Tier.EXTERNAL)
                        + credits.creditDisk() * tierOnly(match, i, Tier.DISK);
                credited.put(bases.get(i), (int) Math.min(cap, Math.floor(blocks * block)));
                held.put(bases.get(i), sources.heldBlocks(bases.get(i)));
            }
        });
        boolean hit = credited.values().stream().anyMatch(c -> c > 0);
        placementLookups.labelValues(hit ? "hit" : "miss").inc();
        return new Residency(stage, tokens.length, credited, held);
    }

    /** Leading blocks whose fastest copy is in {@code tier}: the prefix grows by them once that tier counts. */
    private static int tierOnly(PrefixMatch match, int i, Tier tier) {
        return match.blocksAtOrFaster(i, tier) - match.blocksAtOrFaster(i, Tier.values()[tier.ordinal() - 1]);
    }

    private final class Residency implements PrefixResidency {
        private final String stage;
        private final int inputTokens;
        private final Map<String, Integer> credited;
        private final Map<String, Integer> held;

        Residency(String stage, int inputTokens, Map<String, Integer> credited, Map<String, Integer> held) {
            this.stage = stage;
            this.inputTokens = inputTokens;
            this.credited = credited;
            this.held = held;
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
        public int heldBlocks(Worker worker) {
            return held.getOrDefault(worker.baseUrl(), 0);
        }

        @Override
        public void decided(Worker worker, String outcome) {
            decisions.labelValues("kv_aware", stage, outcome).inc();
        }
    }

    @Override
    public void close() {
        render.close();
    }
}
