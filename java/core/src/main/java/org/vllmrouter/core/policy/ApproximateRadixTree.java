package org.vllmrouter.core.policy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * The cache_aware policy's model of what each worker ("tenant") has cached: a radix tree of the texts
 * sent to it. Each node records, per tenant, when that tenant last used it; a tenant's size is the
 * number of characters on the nodes it uses. Not thread-safe: the policy locks around it.
 */
final class ApproximateRadixTree {

    /** Result of a prefix match: characters matched and the tenant owning the deepest matched node. */
    record Match(int matchedChars, String tenant) {
    }

    private static final class Node {
        String text;
        Node parent;
        final Map<Character, Node> children = new HashMap<>(4);
        final Map<String, Long> lastUse = new HashMap<>(4);

        Node(String text, Node parent) {
            this.text = text;
            this.parent = parent;
        }
    }

    private final Node root = new Node("", null);
    private final Map<String, Long> tenantChars = new HashMap<>();
    private long clock;

    /** Records that {@code tenant} now caches {@code text}. */
    void insert(String text, String tenant) {
        long now = ++clock;
        root.lastUse.put(tenant, now);
        tenantChars.putIfAbsent(tenant, 0L);
        Node cur = root;
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            Node child = cur.children.get(c);
            if (child == null) {
                Node leaf = new Node(text.substring(i), cur);
                leaf.lastUse.put(tenant, now);
                cur.children.put(c, leaf);
                tenantChars.merge(tenant, (long) leaf.text.length(), Long::sum);
                return;
            }
            int shared = sharedPrefix(child.text, text, i);
            if (shared < child.text.length()) {
                child = split(cur, child, shared);
            }
            if (child.lastUse.put(tenant, now) == null) {
                tenantChars.merge(tenant, (long) child.text.length(), Long::sum);
            }
            cur = child;
            i += shared;
        }
    }

    /**
     * Longest prefix of {@code text} cached by any of {@code tenants}; the tenant is the most recent
     * user of the deepest node reached (null when nothing matched).
     */
    Match prefixMatch(String text, Set<String> tenants) {
        Node cur = root;
        int matched = 0;
        while (matched < text.length()) {
            Node child = cur.children.get(text.charAt(matched));
            if (child == null || mostRecent(child, tenants) == null) {
                break;
            }
            int shared = sharedPrefix(child.text, text, matched);
            matched += shared;
            cur = child;
            if (shared < child.text.length()) {
                break;
            }
        }
        return new Match(matched, cur == root ? null : mostRecent(cur, tenants));
    }

    /** Characters cached for {@code tenant} (0 when unknown). */
    long size(String tenant) {
        return tenantChars.getOrDefault(tenant, 0L);
    }

    /** Evicts each tenant's least recently used leaves until it holds at most {@code maxChars}. */
    void evict(long maxChars) {
        for (Map.Entry<String, Long> e : new ArrayList<>(tenantChars.entrySet())) {
            if (e.getValue() > maxChars) {
                evictTenant(e.getKey(), maxChars);
            }
        }
    }

    /** Drops everything {@code tenant} holds. */
    void forget(String tenant) {
        if (tenantChars.containsKey(tenant)) {
            evictTenant(tenant, 0);
            tenantChars.remove(tenant);
        }
    }

    private void evictTenant(String tenant, long maxChars) {
        PriorityQueue<Node> leaves = new PriorityQueue<>((a, b) -> Long.compare(a.lastUse.get(tenant), b.lastUse.get(tenant)));
        collectLeaves(root, tenant, leaves);
        long size = tenantChars.get(tenant);
        while (size > maxChars && !leaves.isEmpty()) {
            Node leaf = leaves.poll();
            leaf.lastUse.remove(tenant);
            size -= leaf.text.length();
            Node parent = leaf.parent;
            if (leaf.lastUse.isEmpty() && leaf.children.isEmpty()) {
                parent.children.remove(leaf.text.charAt(0));
            }
            if (parent != root && isLeafFor(parent, tenant)) {
                leaves.add(parent);
            }
        }
        tenantChars.put(tenant, size);
    }

    private static void collectLeaves(Node node, String tenant, PriorityQueue<Node> out) {
        List<Node> stack = new ArrayList<>();
        stack.add(node);
        while (!stack.isEmpty()) {
            Node n = stack.remove(stack.size() - 1);
            if (n != node && isLeafFor(n, tenant)) {
                out.add(n);
            }
            for (Node child : n.children.values()) {
                if (child.lastUse.containsKey(tenant)) {
                    stack.add(child);
                }
            }
        }
    }

    private static boolean isLeafFor(Node n, String tenant) {
        if (!n.lastUse.containsKey(tenant)) {
            return false;
        }
        for (Node child : n.children.values()) {
            if (child.lastUse.containsKey(tenant)) {
                return false;
            }
        }
        return true;
    }

    private static String mostRecent(Node node, Set<String> tenants) {
        String best = null;
        long bestUse = Long.MIN_VALUE;
        for (Map.Entry<String, Long> e : node.lastUse.entrySet()) {
            if (e.getValue() > bestUse && tenants.contains(e.getKey())) {
                best = e.getKey();
                bestUse = e.getValue();
            }
        }
        return best;
    }

    /** Splits {@code child} after {@code at} characters; the new upper node keeps the child's tenants. */
    private static Node split(Node parent, Node child, int at) {
        Node upper = new Node(child.text.substring(0, at), parent);
        upper.lastUse.putAll(child.lastUse);
        child.text = child.text.substring(at);
        child.parent = upper;
        upper.children.put(child.text.charAt(0), child);
        parent.children.put(upper.text.charAt(0), upper);
        return upper;
    }

    private static int sharedPrefix(String edge, String text, int from) {
        int n = Math.min(edge.length(), text.length() - from);
        int i = 0;
        while (i < n && edge.charAt(i) == text.charAt(from + i)) {
            i++;
        }
        return i;
    }
}
