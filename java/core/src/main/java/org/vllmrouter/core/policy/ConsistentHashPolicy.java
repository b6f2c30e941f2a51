package org.vllmrouter.core.policy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.hash.FbiHash;
import org.vllmrouter.core.worker.Worker;

/**
 * A hash ring of {@value #VIRTUAL_NODES} points per worker ({@code fbi_hash("<url>:<i>")}); a key goes
 * to the first point at or after {@code fbi_hash(key)}, wrapping around. The ring is rebuilt when the
 * ordered list of URLs passed in changes. A target that is not among the candidates falls back to
 * the first candidate, as upstream.
 */
public final class ConsistentHashPolicy implements LoadBalancingPolicy {
    public static final int VIRTUAL_NODES = 160;

    /** Points sorted as unsigned values; stored with the sign bit flipped so signed order works. */
    private record Ring(List<String> urls, long[] points, String[] owners) {
    }

    private volatile Ring ring = new Ring(List.of(), new long[0], new String[0]);

    @Override
    public String name() {
        return PolicyNames.CONSISTENT_HASH;
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        if (candidates.isEmpty()) {
            return null;
        }
        Ring r = ringFor(candidates);
        if (r.points.length == 0) {
            return candidates.get(0);
        }
        String target = r.owners[pointIndex(r, FbiHash.hash(HashKeys.consistentHashKey(request)))];
        for (Worker w : candidates) {
            if (w.url().equals(target)) {
                return w;
            }
        }
        return candidates.get(0);
    }

    /** Key -> owning URL on the ring built from {@code urls}; for tests of key movement. */
    static UnaryOperator<String> ownerLookup(List<String> urls) {
        Ring r = build(urls);
        return key -> r.points.length == 0 ? null : r.owners[pointIndex(r, FbiHash.hash(key))];
    }

    private static int pointIndex(Ring r, long hash) {
        int i = Arrays.binarySearch(r.points, hash ^ Long.MIN_VALUE);
        if (i < 0) {
            i = -i - 1;
        }
        return i == r.points.length ? 0 : i;
    }

    private Ring ringFor(List<Worker> candidates) {
        Ring r = ring;
        if (!sameUrls(r.urls, candidates)) {
            List<String> urls = new ArrayList<>(candidates.size());
            for (Worker w : candidates) {
                urls.add(w.url());
            }
            r = build(urls);
            ring = r;
        }
        return r;
    }

    private static boolean sameUrls(List<String> urls, List<Worker> workers) {
        if (urls.size() != workers.size()) {
            return false;
        }
        for (int i = 0; i < urls.size(); i++) {
            if (!urls.get(i).equals(workers.get(i).url())) {
                return false;
            }
        }
        return true;
    }

    private static Ring build(List<String> urls) {
        // Later workers overwrite earlier ones on a hash collision, as upstream's BTreeMap insert does.
        Map<Long, String> points = new HashMap<>();
        for (String url : urls) {
            for (int i = 0; i < VIRTUAL_NODES; i++) {
                points.put(FbiHash.hash(url + ":" + i) ^ Long.MIN_VALUE, url);
            }
        }
        long[] keys = new long[points.size()];
        int k = 0;
        for (Long p : points.keySet()) {
            keys[k++] = p;
        }
        Arrays.sort(keys);
        String[] owners = new String[keys.length];
        for (int i = 0; i < keys.length; i++) {
            owners[i] = points.get(keys[i]);
        }
        return new Ring(List.copyOf(urls), keys, owners);
    }
}
