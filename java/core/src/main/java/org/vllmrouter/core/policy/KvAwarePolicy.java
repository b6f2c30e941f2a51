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
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.worker.Worker;

/**
 * kv_aware, with 0.1.17's cost: a candidate's cost is its prefill work times its batch, (computed + queued) x
 * (in flight + 1). Computed is the prompt tokens it would have to compute (the input minus the prefix it holds, as the
 * workers' KV events report it, credited by tier); queued is the computed tokens of the requests placed on it that it
 * has not begun to answer yet (still waiting for their prefill); in flight is the router's requests to it, the "+ 1"
 * being this one. A long cached prefix thus keeps a conversation on its worker however many requests decode there:
 * the holder of all but the last block of a prompt stays cheaper until its batch is as many times the idle worker's
 * as the prompt is times the tokens it leaves to compute. Temperature 0 picks the cheapest, the first in registry
 * order on a tie, except for a prompt no candidate holds any of: there the cheapest tie goes to the one whose cache
 * holds the fewest blocks, then in turn, so new sessions arriving one at a time spread over idle workers instead of
 * all filling the first one's cache (0.1.17 breaks that tie differently from one process to the next). Above 0 the
 * choice is sampled from a softmax over -cost / T, T in the cost's units as in 0.1.17. Without tokens (the render
 * call failed, or a route that has none) every credit is 0 and the work is the queued tokens alone; where some
 * candidate's cost is 0 (nothing queued) the least loaded of those is chosen, as in 0.1.17.
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

    private final Settings settings;
    /** Turns through the workers tied for a prompt nobody holds, so equal caches share new sessions. */
    private final AtomicInteger newPromptTurn = new AtomicInteger();
    /** Per worker URL, the computed tokens of the requests placed there that it has not begun to answer. */
    private final Map<String, AtomicLong> queuedTokens = new ConcurrentHashMap<>();
    /** Per request placed with tokens to compute, where it went and how many, until its answer begins. */
    private final Map<RoutingRequest, Queued> queued = new ConcurrentHashMap<>();
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
        double[] cost = new double[n];
        int[] computed = new int[n];
        boolean heldAnywhere = false;
        for (int i = 0; i < n; i++) {
            Worker w = candidates.get(i);
            computed[i] = input - prefix.creditedTokens(w);
            cost[i] = (double) (computed[i] + queuedTokens(w)) * (w.load() + 1);
            heldAnywhere |= computed[i] < input;
        }
        int cheapest = cheapest(cost);
        int chosen = bound != null ? candidates.indexOf(bound)
                : free(cost, cheapest) ? leastLoadedOfFree(candidates, cost)
                : settings.temperature() > 0 ? sample(cost, settings.temperature())
                : input > 0 && !heldAnywhere ? emptiestOfCheapest(candidates, cost, prefix) : cheapest;
        Worker worker = candidates.get(chosen);
        if (input > 0) {
            placed.computeIfAbsent(worker.url(), url -> new Placed()).add(input, input - computed[chosen]);
            queue(request, worker, computed[chosen]);
        }
        if (session != null) {
            affinity.put(session, worker.url());
        }
        prefix.decided(worker, bound != null ? "sticky_hit" : input == 0 ? "missing_tokens" : "prefix_cost");
        return worker;
    }

    /** The prompt of {@code request} is no longer waiting on its worker: its computed tokens leave the queue there. */
    @Override
    public void answerStarted(Worker worker, RoutingRequest request) {
        Queued q = queued.remove(request);
        if (q != null) {
            q.tokens().addAndGet(-q.computed());
        }
    }

    /** The computed tokens of the requests placed on {@code worker} that it has not begun to answer. */
    long queuedTokens(Worker worker) {
        AtomicLong tokens = queuedTokens.get(worker.url());
        return tokens == null ? 0 : tokens.get();
    }

    private void queue(RoutingRequest request, Worker worker, int computed) {
        AtomicLong tokens = queuedTokens.computeIfAbsent(worker.url(), url -> new AtomicLong());
        tokens.addAndGet(computed);
        // A request is on one worker at a time: a retry placing it again ends its earlier wait.
        Queued earlier = queued.put(request, new Queued(tokens, computed));
        if (earlier != null) {
            earlier.tokens().addAndGet(-earlier.computed());
        }
    }

    /** A placed request's computed tokens and the worker queue they count in. */
    private record Queued(AtomicLong tokens, int computed) {
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

    /** At temperature 0 some candidate costs nothing, at any temperature all do: the choice is among those on load. */
    private boolean free(double[] cost, int cheapest) {
        if (cost[cheapest] != 0) {
            return false;
        }
        if (settings.temperature() <= 0) {
            return true;
        }
        for (double c : cost) {
            if (c != 0) {
                return false;
            }
        }
        return true;
    }

    /** Among the candidates that cost nothing (no tokens, nothing queued), the least loaded; the first on a tie. */
    private static int leastLoadedOfFree(List<Worker> candidates, double[] cost) {
        int best = -1;
        for (int i = 0; i < cost.length; i++) {
            if (cost[i] == 0 && (best < 0 || candidates.get(i).load() < candidates.get(best).load())) {
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
