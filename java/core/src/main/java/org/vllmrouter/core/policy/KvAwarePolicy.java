package org.vllmrouter.core.policy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.worker.Worker;

/**
 * kv_aware: each candidate's cost is the prompt tokens it would have to compute (the input minus the prefix it
 * holds, as the workers' KV events report it, credited by tier) plus its in-flight load: the router's in-flight
 * requests to it times the running mean of the tokens recent requests had to compute on the worker chosen for them
 * (a request ahead in the queue costs about one prefill of what is not cached; counting whole prompts instead would
 * let one queued request outweigh a long cached conversation). Temperature 0 picks the cheapest, the first in registry
 * order on a tie, except for a prompt no candidate holds any of: there the cheapest tie (the same load) goes to the
 * one whose cache holds the fewest blocks, then in turn, so new sessions arriving one at a time spread over idle
 * workers instead of all filling the first one's cache. Above 0 the choice is sampled from a softmax over
 * -cost / (T x that mean), which keeps T's meaning independent of prompt length. Without tokens (the render call
 * failed, or a route that has none) every credit is 0 and the choice is on load alone, ties in registry order.
 *
 * <p>Session affinity ({@code --kv-aware-session-affinity-ttl-secs}), as 0.1.17 has it: a request that names a
 * session (the first of the headers {@code x-session-id}, {@code session-id}, {@code thread-id},
 * {@code x-claude-code-session-id}, then the body's {@code vllm_xargs.agentic_context.session_id}) goes to the
 * worker its session was last sent to, whatever the costs, while that worker is a candidate. The binding is made
 * when a worker is chosen, before the request is sent, so a session's concurrent turns share it even when that
 * worker is busier; the TTL is idle time, renewed by every turn. Other identifiers (user, request, tenant ids) do not
 * bind: they are shared by unrelated conversations.
 */
public final class KvAwarePolicy implements LoadBalancingPolicy {
    /** The transfer credit of a block in each slower tier, relative to one on the worker's GPU (1.0). */
    public record Settings(double temperature, double creditHost, double creditExternal, double creditDisk,
                           Duration affinityTtl) {
        /** Without session affinity. */
        public Settings(double temperature, double creditHost, double creditExternal, double creditDisk) {
            this(temperature, creditHost, creditExternal, creditDisk, null);
        }
    }

    /** 0.1.17's session identity headers, in the order they are looked at. */
    static final List<String> AFFINITY_HEADERS = List.of("x-session-id", "session-id", "thread-id",
            "x-claude-code-session-id");
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Weight of one request in the running mean of computed tokens. */
    private static final double MEAN_WEIGHT = 0.05;

    private final Settings settings;
    /** Turns through the workers tied for a prompt nobody holds, so equal caches share new sessions. */
    private final AtomicInteger newPromptTurn = new AtomicInteger();
    /** NaN until a request with tokens has been placed. */
    private volatile double meanComputedTokens = Double.NaN;
    /** Per worker URL, the prompt tokens of the requests placed there and the part of them it held. */
    private final Map<String, Placed> placed = new ConcurrentHashMap<>();
    /** Session identity to the URL of the worker its last turn went to; null without affinity. */
    private final Cache<String, String> affinity;

    public KvAwarePolicy(Settings settings) {
        this(settings, Ticker.systemTicker());
    }

    /** {@code ticker}: the clock session affinity ages by (tests move it). */
    KvAwarePolicy(Settings settings, Ticker ticker) {
        this.settings = settings;
        this.affinity = settings.affinityTtl() == null ? null
                : Caffeine.newBuilder().expireAfterAccess(settings.affinityTtl()).ticker(ticker).build();
    }

    public Settings settings() {
        return settings;
    }

    @Override
    public String name() {
        return PolicyNames.KV_AWARE;
    }

    @Override
    public boolean usesPrefixResidency() {
        return true;
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        int n = candidates.size();
        if (n == 0) {
            return null;
        }
        PrefixResidency prefix = request.prefix();
        String session = affinity == null ? null : sessionIdentity(request);
        Worker bound = session == null ? null : boundWorker(candidates, affinity.getIfPresent(session));
        int input = prefix.inputTokens();
        double seen = meanComputedTokens;
        double mean = Math.max(1.0, Double.isNaN(seen) ? input : seen);
        double[] cost = new double[n];
        int[] computed = new int[n];
        boolean heldAnywhere = false;
        for (int i = 0; i < n; i++) {
            Worker w = candidates.get(i);
            computed[i] = input - prefix.creditedTokens(w);
            cost[i] = computed[i] + w.load() * mean;
            heldAnywhere |= computed[i] < input;
        }
        int chosen = bound != null ? candidates.indexOf(bound)
                : settings.temperature() > 0 ? sample(cost, settings.temperature() * mean)
                : input > 0 && !heldAnywhere ? emptiestOfCheapest(candidates, cost, prefix) : cheapest(cost);
        Worker worker = candidates.get(chosen);
        if (input > 0) {
            meanComputedTokens = Double.isNaN(seen) ? computed[chosen] : seen + MEAN_WEIGHT * (computed[chosen] - seen);
            placed.computeIfAbsent(worker.url(), url -> new Placed()).add(input, input - computed[chosen]);
        }
        if (session != null) {
            affinity.put(session, worker.url());
        }
        prefix.decided(worker, bound != null ? "sticky_hit" : input == 0 ? "missing_tokens" : "prefix_cost");
        return worker;
    }

    /**
     * Per worker, the share of the prompt tokens of the requests placed there that its cache held when they were
     * placed, as the KV events reported it (a block in a slower tier counts at its credit). Requests without tokens
     * are not counted; a worker that was sent none has no rate.
     */
    @Override
    public Map<String, Double> kvCacheHitRates() {
        Map<String, Double> rates = new HashMap<>();
        placed.forEach((url, p) -> {
            long input = p.input.sum();
            if (input > 0) {
                rates.put(url, (double) p.held.sum() / input);
            }
        });
        return rates;
    }

    private static final class Placed {
        final LongAdder input = new LongAdder();
        final LongAdder held = new LongAdder();

        void add(int inputTokens, int heldTokens) {
            input.add(inputTokens);
            held.add(heldTokens);
        }
    }

    /** The request's session identity, or null when it names none. */
    static String sessionIdentity(RoutingRequest request) {
        for (String header : AFFINITY_HEADERS) {
            String value = request.headers().get(header);
            if (value != null && !value.isEmpty()) {
                return value;
            }
        }
        String text = request.text();
        // Most bodies have no agentic context: skip the parse for them.
        if (!text.contains("agentic_context")) {
            return null;
        }
        try {
            JsonNode id = JSON.readTree(text).path("vllm_xargs").path("agentic_context").path("session_id");
            return id.isTextual() && !id.asText().isEmpty() ? id.asText() : null;
        } catch (IOException e) {
            return null;
        }
    }

    /** The candidate bound to the session; null when none is, or the bound worker is no longer a candidate. */
    private static Worker boundWorker(List<Worker> candidates, String url) {
        if (url == null) {
            return null;
        }
        for (Worker w : candidates) {
            if (w.url().equals(url)) {
                return w;
            }
        }
        return null;
    }

    private static int cheapest(double[] cost) {
        int best = 0;
        for (int i = 1; i < cost.length; i++) {
            if (cost[i] < cost[best]) {
                best = i;
            }
        }
        return best;
    }

    /**
     * Among the cheapest (for a prompt nobody holds: the least loaded), the one holding the fewest KV blocks; among
     * those, the next in turn.
     */
    private int emptiestOfCheapest(List<Worker> candidates, double[] cost, PrefixResidency prefix) {
        double min = cost[cheapest(cost)];
        int fewest = Integer.MAX_VALUE;
        int[] tied = new int[cost.length];
        int count = 0;
        for (int i = 0; i < cost.length; i++) {
            if (cost[i] != min) {
                continue;
            }
            int held = prefix.heldBlocks(candidates.get(i));
            if (held < fewest) {
                fewest = held;
                count = 0;
            }
            if (held == fewest) {
                tied[count++] = i;
            }
        }
        return count == 1 ? tied[0] : tied[Math.floorMod(newPromptTurn.getAndIncrement(), count)];
    }

    private static int sample(double[] cost, double scale) {
        double min = cost[cheapest(cost)];
        double[] weight = new double[cost.length];
        double total = 0;
        for (int i = 0; i < cost.length; i++) {
            weight[i] = Math.exp(-(cost[i] - min) / scale);
            total += weight[i];
        }
        double r = ThreadLocalRandom.current().nextDouble(total);
        for (int i = 0; i < cost.length; i++) {
            r -= weight[i];
            if (r < 0) {
                return i;
            }
        }
        return cost.length - 1;
    }
}
