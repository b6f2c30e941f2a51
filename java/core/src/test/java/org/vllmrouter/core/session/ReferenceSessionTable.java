package org.vllmrouter.core.session;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;
import org.vllmrouter.core.hash.Rendezvous;
import org.vllmrouter.core.worker.Worker;

/**
 * The session table as the contract states it, written to be obviously right rather than fast: one map from
 * (pool, id) to binding, counts found by counting, the least-loaded choice and its tie-break spelled out here again
 * (not taken from {@link LeastLoaded}) so that the contract suite checks the production rule against it. Times
 * are milliseconds of the given clock.
 *
 * <p>A new binding goes to the candidate with the fewest sessions across pools, or, for a table whose pools are
 * counted apart ({@code poolCountsOnly}: a shared store, where each pool's keys live in one hash slot and a
 * script sees only those), with the fewest sessions of the session's pool. {@link #leastLoaded} counts across
 * pools either way.
 */
public final class ReferenceSessionTable implements SessionTable {
    /** One session: the request's model and the client's id, compared exactly. */
    public record Key(String pool, String sessionId) {
    }

    /** Where a session is bound and when it was last used. */
    public record Binding(String url, long lastUsedMillis) {
    }

    private final long ttlMillis;
    private final LongSupplier clockMillis;
    private final boolean poolCountsOnly;
    private final Map<Key, Binding> bindings = new HashMap<>();
    private long started;
    private long released;
    private long expired;
    private long rebound;

    public ReferenceSessionTable(long ttlMillis, LongSupplier clockMillis, boolean poolCountsOnly) {
        this.ttlMillis = ttlMillis;
        this.clockMillis = clockMillis;
        this.poolCountsOnly = poolCountsOnly;
    }

    public Map<Key, Binding> bindings() {
        return Map.copyOf(bindings);
    }

    @Override
    public Assignment route(String pool, String sessionId, List<Worker> candidates) {
        long now = clockMillis.getAsLong();
        Key key = new Key(pool, sessionId);
        Binding b = bindings.remove(key);
        Outcome outcome;
        if (b == null) {
            outcome = Outcome.STARTED;
            started++;
        } else if (now - b.lastUsedMillis() < ttlMillis && urls(candidates).contains(b.url())) {
            bindings.put(key, new Binding(b.url(), now));
            return new Assignment(byUrl(candidates, b.url()), Outcome.EXISTING, countOf(b.url(), null));
        } else {
            outcome = Outcome.REBOUND;
            rebound++;
        }
        List<Worker> least = fewest(candidates, poolCountsOnly ? pool : null);
        Worker chosen = least.get(0);
        for (Worker w : least) {
            if (Long.compareUnsigned(Rendezvous.weight(sessionId, w.url()),
                    Rendezvous.weight(sessionId, chosen.url())) > 0) {
                chosen = w;
            }
        }
        bindings.put(key, new Binding(chosen.url(), now));
        return new Assignment(chosen, outcome, countOf(chosen.url(), null));
    }

    @Override
    public List<Worker> leastLoaded(List<Worker> candidates) {
        return fewest(candidates, null);
    }

    /** The candidates with the fewest sessions of {@code pool} (null: of every pool), in candidate order. */
    private List<Worker> fewest(List<Worker> candidates, String pool) {
        int min = Integer.MAX_VALUE;
        for (Worker w : candidates) {
            min = Math.min(min, countOf(w.url(), pool));
        }
        List<Worker> least = new ArrayList<>();
        for (Worker w : candidates) {
            if (countOf(w.url(), pool) == min) {
                least.add(w);
            }
        }
        return least;
    }

    @Override
    public int release(String sessionId) {
        int n = 0;
        for (Key key : List.copyOf(bindings.keySet())) {
            if (key.sessionId().equals(sessionId)) {
                bindings.remove(key);
                n++;
            }
        }
        released += n;
        return n;
    }

    /** Drops the sessions idle for at least the TTL, the longest idle first. */
    @Override
    public int expireIdle(int maxEntries) {
        long now = clockMillis.getAsLong();
        List<Map.Entry<Key, Binding>> due = new ArrayList<>();
        for (Map.Entry<Key, Binding> e : bindings.entrySet()) {
            if (now - e.getValue().lastUsedMillis() >= ttlMillis) {
                due.add(e);
            }
        }
        due.sort(Map.Entry.comparingByValue((a, b) -> Long.compare(a.lastUsedMillis(), b.lastUsedMillis())));
        int n = Math.min(maxEntries, due.size());
        for (Map.Entry<Key, Binding> e : due.subList(0, n)) {
            bindings.remove(e.getKey());
        }
        expired += n;
        return n;
    }

    @Override
    public SessionStats stats() {
        Map<String, Integer> perWorker = new HashMap<>();
        for (Binding b : bindings.values()) {
            perWorker.merge(b.url(), 1, Integer::sum);
        }
        return new SessionStats(perWorker, bindings.size(), started, released, expired, 0, rebound);
    }

    private int countOf(String url, String pool) {
        int n = 0;
        for (Map.Entry<Key, Binding> e : bindings.entrySet()) {
            if (e.getValue().url().equals(url) && (pool == null || e.getKey().pool().equals(pool))) {
                n++;
            }
        }
        return n;
    }

    private static List<String> urls(List<Worker> workers) {
        return workers.stream().map(Worker::url).toList();
    }

    private static Worker byUrl(List<Worker> workers, String url) {
        for (Worker w : workers) {
            if (Objects.equals(w.url(), url)) {
                return w;
            }
        }
        throw new IllegalArgumentException(url);
    }
}
