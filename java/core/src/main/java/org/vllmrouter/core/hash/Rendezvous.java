package org.vllmrouter.core.hash;

import java.nio.charset.StandardCharsets;
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
