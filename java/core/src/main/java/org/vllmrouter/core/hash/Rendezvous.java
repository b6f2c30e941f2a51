package org.vllmrouter.core.hash;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.vllmrouter.core.worker.Worker;

/** Rendezvous (highest random weight) choice with weight {@code fbi_hash("<key>:<worker url>")}. */
public final class Rendezvous {
    private Rendezvous() {
    }

    public static long weight(String key, String url) {
        return FbiHash.hash(key + ":" + url);
    }

    /**
     * The candidates from the highest weight to the lowest, the earlier candidate first on equal weights: the
     * order in which {@link #highest(List, String, boolean) highest(candidates, key, false)} prefers them, for a
     * choice made elsewhere (a shared session store picks the first of the least loaded).
     */
    public static List<Worker> ranked(List<Worker> candidates, String key) {
        if (candidates.size() == 1) {
            return candidates;
        }
        byte[] prefix = (key + ":").getBytes(StandardCharsets.UTF_8);
        byte[][] urls = new byte[candidates.size()][];
        for (int i = 0; i < urls.length; i++) {
            urls[i] = candidates.get(i).url().getBytes(StandardCharsets.UTF_8);
        }
        long[] weights = FbiHash.hashWithSuffixes(prefix, urls);
        List<Integer> order = new ArrayList<>(urls.length);
        for (int i = 0; i < urls.length; i++) {
            order.add(i);
        }
        // List.sort is stable, so equal weights keep candidate order.
        order.sort(Comparator.comparing((Integer i) -> weights[i], Long::compareUnsigned).reversed());
        List<Worker> out = new ArrayList<>(urls.length);
        for (int i : order) {
            out.add(candidates.get(i));
        }
        return out;
    }

    /**
     * The candidate with the highest weight. On equal weights the earlier candidate wins unless
     * {@code laterWinsTies} (upstream's sticky tie-break keeps the first; rendezvous_hash's
     * {@code max_by_key} keeps the last). The key is hashed once per distinct URL length, not once
     * per candidate, so a whole request body as key stays cheap.
     */
    public static Worker highest(List<Worker> candidates, String key, boolean laterWinsTies) {
        if (candidates.size() == 1) {
            return candidates.get(0);
        }
        byte[] prefix = (key + ":").getBytes(StandardCharsets.UTF_8);
        byte[][] urls = new byte[candidates.size()][];
        for (int i = 0; i < urls.length; i++) {
            urls[i] = candidates.get(i).url().getBytes(StandardCharsets.UTF_8);
        }
        long[] weights = FbiHash.hashWithSuffixes(prefix, urls);
        int best = 0;
        for (int i = 1; i < weights.length; i++) {
            int cmp = Long.compareUnsigned(weights[i], weights[best]);
            if (cmp > 0 || (cmp == 0 && laterWinsTies)) {
                best = i;
            }
        }
        return candidates.get(best);
    }
}
