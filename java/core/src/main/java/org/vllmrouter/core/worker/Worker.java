package org.vllmrouter.core.worker;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.vllmrouter.core.config.UrlRedaction;

/**
 * One routable replica. A data-parallel rank of a server is its own worker named {@code baseUrl@rank},
 * so sessions and load are tracked per rank, as upstream does.
 */
public final class Worker {
    public static final String UNKNOWN_MODEL = "unknown";

    private final String url;
    private final String shownUrl;
    private final String baseUrl;
    private final int dpRank;
    private final String modelId;
    private final WorkerRole role;
    private final Integer bootstrapPort;
    private final int healthFailureThreshold;
    private final int healthSuccessThreshold;
    private final CircuitBreaker circuitBreaker;
    private final PauseGate pause = new PauseGate();

    private volatile boolean healthy = true;
    private int consecutiveHealthFailures;
    private int consecutiveHealthSuccesses;
    private final AtomicInteger load = new AtomicInteger();
    private final LongAdder processed = new LongAdder();

    private Worker(Builder b) {
        this.baseUrl = b.baseUrl;
        this.dpRank = b.dpRank;
        this.url = b.dpRank >= 0 ? b.baseUrl + "@" + b.dpRank : b.baseUrl;
        this.shownUrl = UrlRedaction.redact(url);
        this.modelId = b.modelId;
        this.role = b.role;
        this.bootstrapPort = b.bootstrapPort;
        this.healthFailureThreshold = b.healthFailureThreshold;
        this.healthSuccessThreshold = b.healthSuccessThreshold;
        this.circuitBreaker = new CircuitBreaker(b.circuitBreaker);
    }

    /**
     * Starts a worker description. {@code url} may carry a data-parallel rank suffix ({@code http://h:p@2});
     * otherwise the worker is not DP-aware unless {@link Builder#dpRank(int)} is set.
     */
    public static Builder builder(String url) {
        return new Builder(url);
    }

    /** The DP-aware name ({@code http://h:p@rank}), or the base URL when not DP-aware. */
    public String url() {
        return url;
    }

    /** {@link #url()} as responses, the dashboard, metrics and logs show it: without its user info. */
    public String shownUrl() {
        return shownUrl;
    }

    /** The URL requests are sent to (no {@code @rank}). */
    public String baseUrl() {
        return baseUrl;
    }

    /** The data-parallel rank, -1 when not DP-aware. */
    public int dpRank() {
        return dpRank;
    }

    public String modelId() {
        return modelId;
    }

    public WorkerRole role() {
        return role;
    }

    /** Bootstrap port of a prefill worker, null when none. */
    public Integer bootstrapPort() {
        return bootstrapPort;
    }

    public boolean isHealthy() {
        return healthy;
    }

    /** Forces the health state (e.g. an admin action); resets the consecutive-result counters. */
    public synchronized void setHealthy(boolean healthy) {
        this.healthy = healthy;
        consecutiveHealthFailures = 0;
        consecutiveHealthSuccesses = 0;
    }

    /**
     * Records one health probe: a healthy worker turns unhealthy after the failure threshold of
     * consecutive failures, an unhealthy one healthy after the success threshold of consecutive
     * successes; each result resets the opposite counter. A failed probe of a paused worker does not count.
     */
    public synchronized void recordHealthCheck(boolean ok) {
        if (!ok && pause.isPaused()) {
            // A paused (or sleeping) engine may not answer its probe; that is the pause, not a failure.
            return;
        }
        if (ok) {
            consecutiveHealthFailures = 0;
            consecutiveHealthSuccesses++;
            if (!healthy && consecutiveHealthSuccesses >= healthSuccessThreshold) {
                healthy = true;
                consecutiveHealthSuccesses = 0;
            }
        } else {
            consecutiveHealthSuccesses = 0;
            consecutiveHealthFailures++;
            if (healthy && consecutiveHealthFailures >= healthFailureThreshold) {
                healthy = false;
                consecutiveHealthFailures = 0;
            }
        }
    }

    public CircuitBreaker circuitBreaker() {
        return circuitBreaker;
    }

    /** Eligible for selection: healthy and the circuit breaker allows a request. */
    public boolean isAvailable() {
        return healthy && circuitBreaker.canExecute();
    }

    /** The worker's pause state, as the control calls relayed through this router left it. */
    public PauseGate pause() {
        return pause;
    }

    /** Requests in flight through this router. */
    public int load() {
        return load.get();
    }

    public void incrementLoad() {
        load.incrementAndGet();
    }

    /** Never goes below zero, so a stray completion cannot corrupt the balance of later picks. */
    public void decrementLoad() {
        load.getAndUpdate(v -> v > 0 ? v - 1 : 0);
    }

    /** Drift guard used by the health checker (upstream resets small counters periodically). */
    public void resetLoad() {
        load.set(0);
    }

    public long processed() {
        return processed.sum();
    }

    public void incrementProcessed() {
        processed.increment();
    }

    @Override
    public String toString() {
        return "Worker[" + url + ", model=" + modelId + ", role=" + role + ", healthy=" + healthy
                + ", paused=" + pause.isPaused() + ", circuit=" + circuitBreaker.state() + ", load=" + load.get() + "]";
    }

    public static final class Builder {
        private final String baseUrl;
        private int dpRank;
        private String modelId = UNKNOWN_MODEL;
        private WorkerRole role = WorkerRole.REGULAR;
        private Integer bootstrapPort;
        private int healthFailureThreshold = 3;
        private int healthSuccessThreshold = 2;
        private CircuitBreaker.Config circuitBreaker = CircuitBreaker.Config.DEFAULT;

        private Builder(String url) {
            Objects.requireNonNull(url, "worker url");
            int at = url.lastIndexOf('@');
            int authorityStart = url.indexOf("://");
            String suffix = at > authorityStart + 2 ? url.substring(at + 1) : "";
            if (!suffix.isEmpty() && suffix.chars().allMatch(Character::isDigit)) {
                this.baseUrl = url.substring(0, at);
                this.dpRank = Integer.parseInt(suffix);
            } else {
                this.baseUrl = url;
                this.dpRank = -1;
            }
        }

        /** Makes the worker DP-aware with this rank ({@code rank >= 0}). */
        public Builder dpRank(int rank) {
            if (rank < 0) {
                throw new IllegalArgumentException("DP rank must be >= 0, got " + rank);
            }
            this.dpRank = rank;
            return this;
        }

        public Builder modelId(String modelId) {
            this.modelId = modelId == null || modelId.isEmpty() ? UNKNOWN_MODEL : modelId;
            return this;
        }

        public Builder role(WorkerRole role) {
            this.role = Objects.requireNonNull(role, "role");
            return this;
        }

        public Builder bootstrapPort(Integer port) {
            if (port != null && (port < 1 || port > 65535)) {
                throw new IllegalArgumentException("bootstrap port must be between 1 and 65535, got " + port);
            }
            this.bootstrapPort = port;
            return this;
        }

        public Builder healthThresholds(int failureThreshold, int successThreshold) {
            if (failureThreshold < 1 || successThreshold < 1) {
                throw new IllegalArgumentException("health thresholds must be >= 1, got failure="
                        + failureThreshold + " success=" + successThreshold);
            }
            this.healthFailureThreshold = failureThreshold;
            this.healthSuccessThreshold = successThreshold;
            return this;
        }

        public Builder circuitBreaker(CircuitBreaker.Config config) {
            this.circuitBreaker = Objects.requireNonNull(config, "circuit breaker config");
            return this;
        }

        /** Health thresholds and circuit breaker from the router's settings. */
        public Builder settings(WorkerSettings settings) {
            healthThresholds(settings.healthFailureThreshold(), settings.healthSuccessThreshold());
            return circuitBreaker(settings.circuitBreaker());
        }

        public Worker build() {
            return new Worker(this);
        }
    }

    /** The candidate whose URL is {@code url}, or null; on the routing path, so no stream or map. */
    public static Worker byUrl(List<Worker> candidates, String url) {
        int hash = url.hashCode();
        for (int i = 0, n = candidates.size(); i < n; i++) {
            Worker w = candidates.get(i);
            String u = w.url();
            if (u == url || (u.hashCode() == hash && u.equals(url))) {
                return w;
            }
        }
        return null;
    }
}
