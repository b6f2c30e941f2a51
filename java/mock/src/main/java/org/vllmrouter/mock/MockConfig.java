package org.vllmrouter.mock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * What {@link MockWorkers#start(MockConfig)} starts: which ports, and the knobs of each worker.
 *
 * <pre>{@code
 * MockConfig cfg = MockConfig.builder()
 *     .count(3)                              // three workers on ephemeral ports
 *     .all(k -> k.decodeUsPerToken(50))      // every worker
 *     .worker(2, k -> k.failFirstN(1))       // only the third one
 *     .build();
 * }</pre>
 */
public final class MockConfig {

    private final String host;
    private final List<Integer> ports;
    private final int ioThreads;
    private final Knobs defaults;
    private final Map<Integer, List<Consumer<Knobs>>> perWorker;

    private MockConfig(Builder b) {
        this.host = b.host;
        this.ports = List.copyOf(b.ports);
        this.ioThreads = b.ioThreads;
        this.defaults = b.defaults.copy();
        Map<Integer, List<Consumer<Knobs>>> m = new TreeMap<>();
        b.perWorker.forEach((i, l) -> m.put(i, List.copyOf(l)));
        this.perWorker = Collections.unmodifiableMap(m);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** One worker on an ephemeral port with default knobs. */
    public static MockConfig single() {
        return builder().count(1).build();
    }

    public String host() { return host; }

    /** One entry per worker; 0 means an ephemeral port. */
    public List<Integer> ports() { return ports; }

    /** Event-loop threads shared by all workers; 0 = Netty's default. */
    public int ioThreads() { return ioThreads; }

    /** The knobs worker {@code index} starts with (a fresh copy). */
    Knobs knobsFor(int index) {
        Knobs k = defaults.copy();
        perWorker.getOrDefault(index, List.of()).forEach(c -> c.accept(k));
        return k;
    }

    public static final class Builder {
        private String host = "127.0.0.1";
        private final List<Integer> ports = new ArrayList<>();
        private int ioThreads;
        private Knobs defaults = new Knobs();
        private final Map<Integer, List<Consumer<Knobs>>> perWorker = new TreeMap<>();

        private Builder() {}

        public Builder host(String host) {
            this.host = host;
            return this;
        }

        /** Adds {@code n} workers on ephemeral ports. */
        public Builder count(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("count must be >= 1, got " + n);
            }
            for (int i = 0; i < n; i++) {
                ports.add(0);
            }
            return this;
        }

        /** Adds one worker per port (0 = ephemeral). */
        public Builder ports(List<Integer> list) {
            for (int p : list) {
                if (p < 0 || p > 65_535) {
                    throw new IllegalArgumentException("port out of range: " + p);
                }
                ports.add(p);
            }
            return this;
        }

        public Builder ioThreads(int n) {
            this.ioThreads = Math.max(0, n);
            return this;
        }

        /** Replaces the knobs every worker starts from with a copy of {@code template}. */
        public Builder defaults(Knobs template) {
            this.defaults = template.copy();
            return this;
        }

        /** Applies to every worker (before any per-worker change). */
        public Builder all(Consumer<Knobs> change) {
            change.accept(defaults);
            return this;
        }

        /** Applies to worker {@code index} (0-based, in port order) only. */
        public Builder worker(int index, Consumer<Knobs> change) {
            perWorker.computeIfAbsent(index, i -> new ArrayList<>()).add(change);
            return this;
        }

        public MockConfig build() {
            if (ports.isEmpty()) {
                throw new IllegalArgumentException("no workers: give ports or a count");
            }
            for (int index : perWorker.keySet()) {
                if (index < 0 || index >= ports.size()) {
                    throw new IllegalArgumentException(
                            "worker index " + index + " out of range (0.." + (ports.size() - 1) + ")");
                }
            }
            return new MockConfig(this);
        }
    }
}
