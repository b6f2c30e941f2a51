package org.vllmrouter.kv;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One block in a {@link RadixTree}: its key, its children, and which sources hold it in which
 * tier. Readers walk nodes without locks: every field a reader follows is either final or a
 * volatile reference to an array that is never changed after publication (copy on write), so a
 * reader sees each node whole, before or after a writer's change.
 */
final class Node {

    /** Children are a small array (linear scan) until this many, then a hash map. */
    private static final int ARRAY_CHILDREN = 16;
    private static final long[] NO_CLAIMS = new long[0];

    final long key;
    final Node parent;
    /**
     * null, the only child itself (most nodes: a prompt is a chain), a {@code Node[]} or a
     * {@code ConcurrentHashMap<Long, Node>}. Keeping a lone child inline saves a lookup one
     * memory load on every level of a lookup.
     */
    private volatile Object children;
    /** One bit per source slot, {@code words} longs per tier: {@code claims[tier * words + slot / 64]}. */
    private volatile long[] claims = NO_CLAIMS;

    Node(long key, Node parent) {
        this.key = key;
        this.parent = parent;
    }

    @SuppressWarnings("unchecked")
    Node child(long childKey) {
        Object c = children;
        if (c == null) {
            return null;
        }
        if (c instanceof Node only) {
            return only.key == childKey ? only : null;
        }
        if (c instanceof Node[] array) {
            for (Node n : array) {
                if (n.key == childKey) {
                    return n;
                }
            }
            return null;
        }
        return ((ConcurrentHashMap<Long, Node>) c).get(childKey);
    }

    boolean hasChildren() {
        Object c = children;
        return c != null && (!(c instanceof ConcurrentHashMap<?, ?> map) || !map.isEmpty());
    }

    /** Writers only, under the tree's lock. */
    @SuppressWarnings("unchecked")
    void addChild(Node child) {
        Object c = children;
        if (c == null) {
            children = child;
        } else if (c instanceof Node only) {
            children = new Node[] {only, child};
        } else if (c instanceof Node[] array) {
            if (array.length < ARRAY_CHILDREN) {
                Node[] grown = Arrays.copyOf(array, array.length + 1);
                grown[array.length] = child;
                children = grown;
            } else {
                ConcurrentHashMap<Long, Node> map = new ConcurrentHashMap<>(ARRAY_CHILDREN * 4);
                for (Node n : array) {
                    map.put(n.key, n);
                }
                map.put(child.key, child);
                children = map;
            }
        } else {
            ((ConcurrentHashMap<Long, Node>) c).put(child.key, child);
        }
    }

    /** Writers only, under the tree's lock. Returns false when {@code child} was not linked here. */
    @SuppressWarnings("unchecked")
    boolean removeChild(Node child) {
        Object c = children;
        if (c instanceof Node only) {
            if (only != child) {
                return false;
            }
            children = null;
            return true;
        }
        if (c instanceof Node[] array) {
            int at = -1;
            for (int i = 0; i < array.length; i++) {
                if (array[i] == child) {
                    at = i;
                }
            }
            if (at < 0) {
                return false;
            }
            if (array.length == 2) {
                children = array[1 - at];
            } else {
                Node[] shrunk = new Node[array.length - 1];
                System.arraycopy(array, 0, shrunk, 0, at);
                System.arraycopy(array, at + 1, shrunk, at, array.length - at - 1);
                children = shrunk;
            }
            return true;
        }
        return c != null && ((ConcurrentHashMap<Long, Node>) c).remove(child.key, child);
    }

    long[] claims() {
        return claims;
    }

    boolean holds(int slot, Tier tier) {
        long[] c = claims;
        int words = c.length / Tier.ALL.length;
        int w = slot >>> 6;
        return w < words && (c[tier.ordinal() * words + w] & (1L << slot)) != 0;
    }

    boolean holdsAny(int slot) {
        for (Tier t : Tier.ALL) {
            if (holds(slot, t)) {
                return true;
            }
        }
        return false;
    }

    boolean unclaimed() {
        for (long word : claims) {
            if (word != 0) {
                return false;
            }
        }
        return true;
    }

    /** Writers only, under the tree's lock. */
    void claim(int slot, Tier tier, int treeWords) {
        if (holds(slot, tier)) {
            return;
        }
        long[] c = claims;
        int words = Math.max(c.length / Tier.ALL.length, Math.max(treeWords, (slot >>> 6) + 1));
        long[] next = new long[words * Tier.ALL.length];
        copyInto(c, next, words);
        next[tier.ordinal() * words + (slot >>> 6)] |= 1L << slot;
        claims = next;
    }

    /** Writers only, under the tree's lock. */
    void release(int slot, Tier tier) {
        if (!holds(slot, tier)) {
            return;
        }
        long[] next = claims.clone();
        int words = next.length / Tier.ALL.length;
        next[tier.ordinal() * words + (slot >>> 6)] &= ~(1L << slot);
        claims = allZero(next) ? NO_CLAIMS : next;
    }

    private static void copyInto(long[] from, long[] to, int toWords) {
        int fromWords = from.length / Tier.ALL.length;
        for (int t = 0; t < Tier.ALL.length; t++) {
            System.arraycopy(from, t * fromWords, to, t * toWords, fromWords);
        }
    }

    private static boolean allZero(long[] words) {
        for (long w : words) {
            if (w != 0) {
                return false;
            }
        }
        return true;
    }
}
