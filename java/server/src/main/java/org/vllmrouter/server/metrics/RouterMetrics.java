package org.vllmrouter.server.metrics;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.Collector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.worker.CircuitBreaker;
import org.vllmrouter.core.worker.Worker;

/**
 * Upstream's metric names plus the session metrics of sticky routing ({@code vllm_router_sticky_*}). Each router
 * owns its registry, so several routers can share a JVM. Worker and session gauges are read at scrape time from the
 * registry and the policies. No exemplars: nothing here carries a trace id, and sampling them costs every request
 * a little.
 *
 * <p>The metrics every proxied request writes (its duration, the HTTP request count, the policy's decision, the
 * worker's processed count and circuit outcome) count per thread ({@link ShardedCounter}, {@link ShardedHistogram})
 * rather than in the client's shared adders; the rest, written on errors, retries and PD requests, are the
 * client's. A successful request is observed once, in {@code vllm_router_request_duration_seconds}: the success
 * counters and the route-less duration histograms are sums of it, read at scrape time.
 */
public final class RouterMetrics {
    private static final double[] DURATION_BUCKETS = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30,
            45, 60, 90, 120, 180, 240};

    private static final String EMBEDDINGS_ROUTE = "/v1/embeddings";

    private static final Set<String> STANDARD_METHODS =
            Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH");

    final PrometheusRegistry registry = new PrometheusRegistry();
    private final ShardedHistogram requestDuration = register(new ShardedHistogram(
            "vllm_router_request_duration_seconds", "Request duration", DURATION_BUCKETS, "route"));
    private final Counter requestErrors = counter("vllm_router_request_errors_total", "Failed requests", "route", "error_type");
    private final Counter retries = counter("vllm_router_retries_total", "Retried attempts", "route");
    private final Histogram retryBackoff = histogram("vllm_router_retry_backoff_duration_seconds", "Backoff before a retry", "attempt");
    private final Counter retriesExhausted = counter("vllm_router_retries_exhausted_total", "Requests that used every attempt", "route");
    private final Counter cbTransitions = counter("vllm_router_cb_state_transitions_total", "Circuit breaker transitions", "worker", "from", "to");
    private final ShardedCounter cbOutcomes = new ShardedCounter(registry,
            "vllm_router_cb_outcomes_total", "Outcomes recorded by circuit breakers", "worker", "outcome");
    private final ShardedCounter processed = new ShardedCounter(registry,
            "vllm_router_processed_requests_total", "Requests sent to a worker", "worker");
    private final ShardedCounter policyDecisions = new ShardedCounter(registry,
            "vllm_router_policy_decisions_total", "Worker selections", "policy", "worker");
    private final Counter embeddingsErrors = counter("vllm_router_embeddings_errors_total", "Embeddings errors", "error_type");
    private final Counter pdRequests = counter("vllm_router_pd_requests_total", "PD requests", "route");
    private final Counter pdPrefill = counter("vllm_router_pd_prefill_requests_total", "PD prefill requests", "worker");
    private final Counter pdDecode = counter("vllm_router_pd_decode_requests_total", "PD decode requests", "worker");
    private final Counter pdErrors = counter("vllm_router_pd_errors_total", "PD errors", "error_type");
    private final Counter pdPrefillErrors = counter("vllm_router_pd_prefill_errors_total", "PD prefill errors", "worker");
    private final Counter pdDecodeErrors = counter("vllm_router_pd_decode_errors_total", "PD decode errors", "worker");
    private final Histogram pdDuration = histogram("vllm_router_pd_request_duration_seconds", "PD request duration", "route");
    private final ShardedCounter promptTokens = new ShardedCounter(registry,
            "vllm_router_worker_prompt_tokens_total",
            "Prompt tokens of session requests whose answer reported cached tokens", "worker");
    private final ShardedCounter cachedTokens = new ShardedCounter(registry,
            "vllm_router_worker_cached_tokens_total",
            "Prompt tokens the worker found in its prefix cache (usage.prompt_tokens_details.cached_tokens)", "worker");
    private final ShardedCounter httpRequests = new ShardedCounter(registry, "vllm_router_http_requests_total",
            "HTTP requests", "route", "method", "status_code", "status_class");

    // Data points of the per-request metrics, resolved once per label set: the client's labelValues() allocates and
    // hashes a label list on every call. Nothing here ever removes a label set, so a cached point stays the live one.
    private final ConcurrentHashMap<String, ShardedHistogram.Point> durationByRoute = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, ShardedCounter.Point> processedByWorker = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, ConcurrentHashMap<String, ShardedCounter.Point>> decisionsByPolicy =
            new ConcurrentHashMap<>();
    /** Per worker: its prompt-token point, then its cached-token point. */
    private final ConcurrentHashMap<String, ShardedCounter.Point[]> tokensByWorker = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, ShardedCounter.Point[]> outcomesByWorker = new ConcurrentHashMap<>();
    /** Route, then method, then the status code's point (indexed by code). */
    private final ConcurrentHashMap<String, ConcurrentHashMap<String, AtomicReferenceArray<ShardedCounter.Point>>> http =
            new ConcurrentHashMap<>();

    public RouterMetrics(Supplier<List<Worker>> workers, Supplier<SessionStats> sessions,
                         BooleanSupplier storeDegraded) {
        // Successful requests are observed once, in the duration histogram; these are read from it at scrape time.
        Predicate<List<String>> embeddingsRoute = labels -> labels.get(0).equals(EMBEDDINGS_ROUTE);
        registry.register(requestDuration.countOf("vllm_router_requests_total", "Successful requests", true, labels -> true));
        registry.register(requestDuration.sumOf("vllm_router_generate_duration_seconds",
                "Duration of successful requests", labels -> true));
        registry.register(requestDuration.countOf("vllm_router_embeddings_total", "Embeddings requests", false,
                embeddingsRoute));
        registry.register(requestDuration.sumOf("vllm_router_embeddings_duration_seconds", "Embeddings duration",
                embeddingsRoute));
        GaugeWithCallback.builder().name("vllm_router_active_workers").help("Registered workers")
                .callback(cb -> cb.call(workers.get().size())).register(registry);
        GaugeWithCallback.builder().name("vllm_router_worker_health").help("Worker health (1 healthy, 0 not)")
                .labelNames("worker")
                .callback(cb -> workers.get().forEach(w -> cb.call(w.isHealthy() ? 1 : 0, w.shownUrl()))).register(registry);
        GaugeWithCallback.builder().name("vllm_router_worker_load").help("In-flight requests per worker")
                .labelNames("worker")
                .callback(cb -> workers.get().forEach(w -> cb.call(w.load(), w.shownUrl()))).register(registry);
        GaugeWithCallback.builder().name("vllm_router_running_requests").help("Running requests per worker")
                .labelNames("worker")
                .callback(cb -> workers.get().forEach(w -> cb.call(w.load(), w.shownUrl()))).register(registry);
        GaugeWithCallback.builder().name("vllm_router_cb_state").help("Circuit state (0 closed, 1 open, 2 half_open)")
                .labelNames("worker")
                .callback(cb -> workers.get().forEach(w -> cb.call(stateValue(w.circuitBreaker().state()), w.shownUrl())))
                .register(registry);
        GaugeWithCallback.builder().name("vllm_router_sticky_active_sessions").help("Active sticky sessions per worker")
                .labelNames("worker")
                .callback(cb -> {
                    for (Map.Entry<String, Integer> e : sessions.get().activeByWorker().entrySet()) {
                        cb.call(e.getValue(), UrlRedaction.redact(e.getKey()));
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("vllm_router_sticky_sessions").help("Active sticky sessions in total")
                .callback(cb -> cb.call(sessions.get().activeSessions())).register(registry);
        CounterWithCallback.builder().name("vllm_router_sticky_sessions_started_total").help("Sessions bound to a worker")
                .callback(cb -> cb.call(sessions.get().started())).register(registry);
        CounterWithCallback.builder().name("vllm_router_sticky_sessions_released_total").help("Sessions released by finish_session")
                .callback(cb -> cb.call(sessions.get().released())).register(registry);
        CounterWithCallback.builder().name("vllm_router_sticky_sessions_expired_total").help("Sessions dropped after the idle TTL")
                .callback(cb -> cb.call(sessions.get().expired())).register(registry);
        CounterWithCallback.builder().name("vllm_router_sticky_sessions_evicted_total")
                .help("Least recently used sessions dropped to make room (max_sessions reached)")
                .callback(cb -> cb.call(sessions.get().evicted())).register(registry);
        CounterWithCallback.builder().name("vllm_router_sticky_sessions_rebound_total")
                .help("Sessions bound again elsewhere: their worker unavailable, idle past the TTL, or moved by "
                        + "sticky_balanced")
                .callback(cb -> cb.call(sessions.get().rebound())).register(registry);
        GaugeWithCallback.builder().name("vllm_router_session_store_degraded")
                .help("1 while the shared session store is unreachable and routing uses this router's own view")
                .callback(cb -> cb.call(storeDegraded.getAsBoolean() ? 1 : 0)).register(registry);
    }

    /** Counts, at scrape time, the inbound-auth verdicts the bounded verdict cache dropped. */
    public void countAuthVerdictsDropped(LongSupplier dropped) {
        CounterWithCallback.builder().name("vllm_router_auth_verdicts_evicted_total")
                .help("Cached inbound API key verdicts dropped (cache full or TTL passed)")
                .callback(cb -> cb.call(dropped.getAsLong())).register(registry);
    }

    private <C extends Collector> C register(C collector) {
        registry.register(collector);
        return collector;
    }

    private Counter counter(String name, String help, String... labels) {
        return Counter.builder().name(name).help(help).labelNames(labels).withoutExemplars().register(registry);
    }

    private Histogram histogram(String name, String help, String... labels) {
        return Histogram.builder().name(name).help(help).labelNames(labels).classicOnly()
                .classicUpperBounds(DURATION_BUCKETS).withoutExemplars().register(registry);
    }

    /** Upper bounds, in seconds, of the duration histograms' buckets; one more bucket above them holds the rest. */
    static double[] durationBuckets() {
        return DURATION_BUCKETS.clone();
    }

    /**
     * Successful requests so far per duration bucket (not cumulative; the last entry is above the highest bound),
     * as {@code vllm_router_generate_duration_seconds} counts them.
     */
    long[] succeededByDuration() {
        return requestDuration.counts(labels -> true);
    }

    /** Failed requests so far, every route and error type ({@code vllm_router_request_errors_total}). */
    long failedRequests() {
        long total = 0;
        for (CounterSnapshot.CounterDataPointSnapshot point : requestErrors.collect().getDataPoints()) {
            total += (long) point.getValue();
        }
        return total;
    }

    private static int stateValue(CircuitBreaker.State state) {
        return switch (state) {
            case CLOSED -> 0;
            case OPEN -> 1;
            case HALF_OPEN -> 2;
        };
    }

    private static <T> T point(ConcurrentHashMap<String, T> cache, String key, Function<String, T> create) {
        T found = cache.get(key);
        return found != null ? found : cache.computeIfAbsent(key, create);
    }

    /**
     * A proxied request ended with {@code status} ({@code success} by the worker-call rule; 499: the client left):
     * a success below 400 counts as served, anything else under its error type.
     */
    public void requestEnded(String route, int status, boolean success, double seconds) {
        if (success && status < 400) {
            requestSucceeded(route, seconds);
        } else if (status == 499) {
            requestFailed(route, "client_disconnected");
        } else {
            requestFailed(route, status >= 500 ? "http_" + status : "non_retryable_error");
        }
    }

    private void requestSucceeded(String route, double seconds) {
        point(durationByRoute, route, requestDuration::labelValues).observe(seconds);
    }

    public void requestFailed(String route, String errorType) {
        requestErrors.labelValues(route, errorType).inc();
        if (route.equals(EMBEDDINGS_ROUTE)) {
            embeddingsErrors.labelValues(errorType).inc();
        }
    }

    public void retry(String route, int attempt, double backoffSeconds) {
        retries.labelValues(route).inc();
        retryBackoff.labelValues(Integer.toString(attempt)).observe(backoffSeconds);
    }

    public void retriesExhausted(String route) {
        retriesExhausted.labelValues(route).inc();
    }

    public void circuitOutcome(String worker, boolean success) {
        ShardedCounter.Point[] outcomes = point(outcomesByWorker, worker, w -> new ShardedCounter.Point[] {
                cbOutcomes.labelValues(w, "failure"), cbOutcomes.labelValues(w, "success")});
        outcomes[success ? 1 : 0].inc();
    }

    public void circuitTransition(String worker, CircuitBreaker.State from, CircuitBreaker.State to) {
        cbTransitions.labelValues(worker, label(from), label(to)).inc();
    }

    public void selected(String policy, String worker) {
        point(processedByWorker, worker, processed::labelValues).inc();
        point(point(decisionsByPolicy, policy, p -> new ConcurrentHashMap<>()), worker,
                w -> policyDecisions.labelValues(policy, w)).inc();
    }

    /**
     * {@code worker} answered a session's request reporting {@code prompt} prompt tokens, {@code cached} of them
     * found in its prefix cache. Only answers that report both count, so the two totals make a hit rate.
     */
    public void tokensReported(String worker, long prompt, long cached) {
        ShardedCounter.Point[] tokens = point(tokensByWorker, worker, w -> new ShardedCounter.Point[] {
                promptTokens.labelValues(w), cachedTokens.labelValues(w)});
        tokens[0].add(prompt);
        tokens[1].add(cached);
    }

    /**
     * Per worker label, the share of prompt tokens found in the worker's prefix cache over every session request it
     * answered with a cached count (for the status page); workers with no such answer are absent.
     */
    public Map<String, Double> cachedTokenRates() {
        Map<String, Double> rates = new java.util.HashMap<>();
        tokensByWorker.forEach((worker, tokens) -> {
            long prompt = tokens[0].value();
            if (prompt > 0) {
                rates.put(worker, Math.min(1.0, (double) tokens[1].value() / prompt));
            }
        });
        return rates;
    }

    public void pdRequest(String route, String prefillWorker, String decodeWorker) {
        pdRequests.labelValues(route).inc();
        pdPrefill.labelValues(prefillWorker).inc();
        pdDecode.labelValues(decodeWorker).inc();
    }

    public void pdPrefillFailed(String prefillWorker, String errorType) {
        pdErrors.labelValues(errorType).inc();
        pdPrefillErrors.labelValues(prefillWorker).inc();
    }

    public void pdDecodeFailed(String decodeWorker) {
        pdErrors.labelValues("decode_error").inc();
        pdDecodeErrors.labelValues(decodeWorker).inc();
    }

    public void pdDuration(String route, double seconds) {
        pdDuration.labelValues(route).observe(seconds);
    }

    /**
     * Counts a response under its route template, method and status. A method outside HTTP's registered ones is
     * counted as {@code OTHER}: the client chooses it, and every label set lives as long as the registry.
     */
    public void httpRequest(String route, String clientMethod, int status) {
        String method = STANDARD_METHODS.contains(clientMethod) ? clientMethod : "OTHER";
        if (status < 100 || status > 599) {
            httpRequests.labelValues(route, method, Integer.toString(status), (status / 100) + "xx").inc();
            return;
        }
        AtomicReferenceArray<ShardedCounter.Point> byStatus = point(point(http, route, r -> new ConcurrentHashMap<>()),
                method, m -> new AtomicReferenceArray<>(600));
        ShardedCounter.Point counter = byStatus.get(status);
        if (counter == null) {
            counter = httpRequests.labelValues(route, method, Integer.toString(status), (status / 100) + "xx");
            byStatus.set(status, counter);
        }
        counter.inc();
    }

    private static String label(CircuitBreaker.State state) {
        return state.name().toLowerCase(java.util.Locale.ROOT);
    }

    /** The registry this router's metrics live in, for components that add their own (worker discovery). */
    public PrometheusRegistry registry() {
        return registry;
    }
}
