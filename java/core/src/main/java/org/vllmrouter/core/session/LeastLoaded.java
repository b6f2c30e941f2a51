package org.vllmrouter.core.session;

import java.util.ArrayList;
import java.util.List;
import java.util.function.ToIntFunction;
import java.util.function.ToLongFunction;
import org.vllmrouter.core.hash.Rendezvous;
import org.vllmrouter.core.worker.Worker;

/**
 * sticky_least_loaded's choice, the one definition every session table and the policy use: the candidates with the
 * fewest sessions, ties broken by the highest rendezvous weight {@code fbi_hash("<key>:<url>")} (unsigned), then by
 * candidate order, as upstream does.
 *
 * <p>A table that chooses in a server-side script (Redis, {@code route.lua}) gets the candidates in
 * {@link #preferenceOrder} and takes the first with the fewest sessions, which is the same choice; the session-table
 * contract suite runs that script against a plain model of this rule, so the two cannot drift apart unnoticed.
 */
public final class LeastLoaded {
    private LeastLoaded() {
    }

    /** The candidates holding the fewest sessions ({@code sessionsOf} a worker URL), in candidate order. */
    public static List<Worker> fewest(List<Worker> candidates, ToIntFunction<String> sessionsOf) {
        List<Worker> least = new ArrayList<>(candidates.size());
        int min = Integer.MAX_VALUE;
        for (Worker w : candidates) {
            int n = sessionsOf.applyAsInt(w.url());
            if (n < min) {
                min = n;
                least.clear();
            }
            if (n == min) {
                least.add(w);
            }
        }
        return least;
    }

    /** The candidate a new binding of {@code key} goes to: the fewest sessions, then {@link #tieBreak}. */
    public static Worker choose(List<Worker> candidates, ToIntFunction<String> sessionsOf, String key) {
        int min = Integer.MAX_VALUE;
        int ties = 0;
        Worker first = null;
        for (Worker w : candidates) {
            int n = sessionsOf.applyAsInt(w.url());
            if (n < min) {
                min = n;
                ties = 1;
                first = w;
            } else if (n == min) {
                ties++;
            }
        }
        // One least-loaded candidate (the common case under load): no hashing.
        return ties == 1 ? first : tieBreak(fewest(candidates, sessionsOf), key);
    }

    /**
     * The candidate with the least {@code loadOf}, ties broken as {@link #tieBreak} breaks them: the same rule as
     * {@link #choose} over another measure of load (sticky_balanced's projected tokens).
     */
    public static Worker lightest(List<Worker> candidates, ToLongFunction<Worker> loadOf, String key) {
        long min = Long.MAX_VALUE;
        List<Worker> least = null;
        Worker first = null;
        for (Worker w : candidates) {
            long n = loadOf.applyAsLong(w);
            if (n < min) {
                min = n;
                first = w;
                least = null;
            } else if (n == min) {
                if (least == null) {
                    least = new ArrayList<>();
                    least.add(first);
                }
                least.add(w);
            }
        }
        return least == null ? first : tieBreak(least, key);
    }

    /** Among equally loaded candidates: the highest rendezvous weight of {@code key}, the earlier one on a tie. */
    public static Worker tieBreak(List<Worker> tied, String key) {
        return Rendezvous.highest(tied, key, false);
    }

    /** The candidates in the order {@link #tieBreak} prefers them, for a choice made elsewhere (a store's script). */
    public static List<Worker> preferenceOrder(List<Worker> candidates, String key) {
        return Rendezvous.ranked(candidates, key);
    }
}
