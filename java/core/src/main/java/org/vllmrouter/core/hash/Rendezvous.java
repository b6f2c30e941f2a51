package org.vllmrouter.core.hash;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.vllmrouter.core.worker.Worker;

/** Rendezvous (highest random weight) choice with weight {@code fbi_hash("<key>:<worker url>")}. */
public final class Rendezvous {
    private Rendezvous() {
    }

    public static long weight(String key, String url) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        return weight(k, url);
    }

    private static long weight(byte[] keyUtf8, String url) {
        byte[] u = url.getBytes(StandardCharsets.UTF_8);
        byte[] joined = new byte[keyUtf8.length + 1 + u.length];
        System.arraycopy(keyUtf8, 0, joined, 0, keyUtf8.length);
        joined[keyUtf8.length] = ':';
        System.arraycopy(u, 0, joined, keyUtf8.length + 1, u.length);
        return FbiHash.hash(joined);
    }

    /**
     * The candidate with the highest weight. On equal weights the earlier candidate wins unless
     * {@code laterWinsTies} (upstream's sticky tie-break keeps the first; rendezvous_hash's
     * {@code max_by_key} keeps the last).
     */
    public static Worker highest(List<Worker> candidates, String key, boolean laterWinsTies) {
        if (candidates.size() == 1) {
            return candidates.get(0);
        }
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        Worker best = null;
        long bestWeight = 0;
        for (Worker w : candidates) {
            long weight = weight(k, w.url());
            int cmp = best == null ? 1 : Long.compareUnsigned(weight, bestWeight);
            if (cmp > 0 || (cmp == 0 && laterWinsTies)) {
                best = w;
                bestWeight = weight;
            }
        }
        return best;
    }
}
