package org.vllmrouter.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.logging.Logger;
import org.vllmrouter.core.session.SessionTable.Outcome;
import org.vllmrouter.core.worker.Worker;

/**
 * The store's Lua scripts as typed calls: each builds its keys ({@link Keys}) and arguments, runs through
 * {@link Scripts}, and decodes the reply. A reply that must reach a near cache before any later invalidation is
 * handed, decoded, to the caller's callback on the I/O thread; keys the scripts dropped for their wrong type are
 * logged.
 */
final class ScriptGateway {
    // The table's records, as they always were.
    private static final Logger LOG = Logger.getLogger(RedisSessionTable.class.getName());

    /** Sessions per script call when expiring or adopting, so that no call holds the server for long. */
    static final int BATCH = 256;

    /** How route.lua placed a request, and the sessions of the pool on the chosen worker. */
    record Routed(Outcome outcome, String url, int sessionsOnUrl, String epoch) {
    }

    /** The pool's epoch and, for each offered binding, the URL its session is bound to now ("" when none). */
    record Adopted(String epoch, List<String> boundNow) {
    }

    /** One pool's counters, read together; {@code epoch} is null while the pool has none. */
    record PoolStats(long sessions, Map<String, Integer> perWorker, long started, long released, long expired,
                     long rebound, String epoch) {
    }

    private final Scripts scripts;
    private final String description;

    ScriptGateway(Scripts scripts, String description) {
        this.scripts = scripts;
        this.description = description;
    }

    /** route.lua with the candidates in tie-break order ({@code ranked}). */
    CompletableFuture<Routed> route(Keys.Pool keys, String sessionId, long now, long ttlMillis, List<Worker> ranked,
                                    Consumer<Routed> onReply) {
        String[] args = new String[4 + ranked.size()];
        args[0] = sessionId;
        args[1] = Long.toString(now);
        args[2] = Long.toString(ttlMillis);
        args[3] = newEpoch();
        for (int i = 0; i < ranked.size(); i++) {
            args[4 + i] = ranked.get(i).url();
        }
        String[] routeKeys = {keys.binding(sessionId), keys.idle(), keys.counts(), keys.stats()};
        return scripts.run(scripts.route, routeKeys, args, r -> onReply.accept(routed(r)))
                .thenApply(r -> {
                    logDropped(r.get(4));
                    return routed(r);
                });
    }

    private static Routed routed(List<Object> reply) {
        Outcome outcome = switch ((String) reply.get(0)) {
            case "existing" -> Outcome.EXISTING;
            case "rebound" -> Outcome.REBOUND;
            default -> Outcome.STARTED;
        };
        return new Routed(outcome, (String) reply.get(1), ((Long) reply.get(2)).intValue(), (String) reply.get(3));
    }

    /** adopt.lua: offers bindings made on this router's own, at most {@link #BATCH}. */
    CompletableFuture<Adopted> adopt(Keys.Pool keys, long now, long ttlMillis, List<NearCache.Binding> offered,
                                     Consumer<Adopted> onReply) {
        String[] args = new String[4 + 3 * offered.size()];
        args[0] = Long.toString(now);
        args[1] = Long.toString(ttlMillis);
        args[2] = keys.bindingPrefix();
        args[3] = newEpoch();
        for (int i = 0; i < offered.size(); i++) {
            NearCache.Binding b = offered.get(i);
            args[4 + 3 * i] = b.sessionId;
            args[5 + 3 * i] = b.url;
            args[6 + 3 * i] = Long.toString(b.lastUsedMillis);
        }
        return scripts.run(scripts.adopt, poolKeys(keys), args, r -> onReply.accept(adopted(r)))
                .thenApply(r -> {
                    logDropped(r.get(1));
                    return adopted(r);
                });
    }

    private static Adopted adopted(List<Object> reply) {
        List<String> boundNow = new ArrayList<>();
        for (Object url : (List<?>) reply.get(2)) {
            boundNow.add((String) url);
        }
        return new Adopted((String) reply.get(0), boundNow);
    }

    /**
     * release.lua in each of {@code pools} at once, each pool's near cache forgetting the session on its reply;
     * returns how many bindings it released.
     */
    int release(List<Pool> pools, String sessionId, long releasedAt, Duration timeout)
            throws StoreUnavailableException {
        String[] args = {sessionId, Long.toString(releasedAt)};
        List<CompletableFuture<List<Object>>> replies = new ArrayList<>();
        for (Pool p : pools) {
            Keys.Pool keys = p.keys;
            String[] releaseKeys = {keys.binding(sessionId), keys.idle(), keys.counts(), keys.stats(),
                    keys.released()};
            replies.add(scripts.run(scripts.release, releaseKeys, args, r -> p.cache.forget(sessionId)));
        }
        int released = 0;
        for (CompletableFuture<List<Object>> reply : replies) {
            List<Object> r = StoreTimeouts.await(reply, timeout);
            released += ((Long) r.get(0)).intValue();
            logDropped(r.get(1));
        }
        return released;
    }

    /**
     * expire.lua: drops up to {@code batch} sessions of the pool last used at or before {@code cutoff}, which its near
     * cache forgets on the reply, and the release records older than {@code releaseCutoff}; the ids it dropped.
     */
    CompletableFuture<List<String>> expire(Pool pool, long cutoff, int batch, long releaseCutoff) {
        String[] args = {Long.toString(cutoff), Integer.toString(batch), pool.keys.bindingPrefix(),
                Long.toString(releaseCutoff)};
        return scripts.run(scripts.expire, poolKeys(pool.keys), args, r -> expired(r).forEach(pool.cache::forget))
                .thenApply(r -> {
                    logDropped(r.get(1));
                    return expired(r);
                });
    }

    private static List<String> expired(List<Object> reply) {
        List<String> ids = new ArrayList<>();
        for (Object id : (List<?>) reply.get(0)) {
            ids.add((String) id);
        }
        return ids;
    }

    /** stats.lua: the pool's counters in one step. */
    CompletableFuture<PoolStats> stats(Keys.Pool keys) {
        return scripts.run(scripts.stats, new String[] {keys.idle(), keys.counts(), keys.stats()}, new String[0], null)
                .thenApply(r -> {
                    logDropped(r.get(3));
                    return poolStats(r);
                });
    }

    private static PoolStats poolStats(List<Object> reply) {
        List<?> counts = (List<?>) reply.get(1);
        Map<String, Integer> perWorker = new HashMap<>();
        for (int i = 0; i + 1 < counts.size(); i += 2) {
            int n = Integer.parseInt((String) counts.get(i + 1));
            if (n > 0) {
                perWorker.put((String) counts.get(i), n);
            }
        }
        List<?> stats = (List<?>) reply.get(2);
        long[] lifetime = new long[4];
        for (int i = 0; i < lifetime.length; i++) {
            lifetime[i] = stats.get(i) == null ? 0 : Long.parseLong((String) stats.get(i));
        }
        return new PoolStats((Long) reply.get(0), perWorker, lifetime[0], lifetime[1], lifetime[2], lifetime[3],
                (String) stats.get(4));
    }

    private static String[] poolKeys(Keys.Pool keys) {
        return new String[] {keys.idle(), keys.counts(), keys.stats(), keys.released()};
    }

    /** A fresh pool epoch: set by the first script that finds a pool without one (after its data was lost). */
    private static String newEpoch() {
        return Long.toHexString(ThreadLocalRandom.current().nextLong());
    }

    private void logDropped(Object dropped) {
        if (dropped instanceof List<?> keys && !keys.isEmpty()) {
            LOG.warning("Session store " + description + ": dropped keys of the wrong type, treated as absent: "
                    + keys);
        }
    }
}
