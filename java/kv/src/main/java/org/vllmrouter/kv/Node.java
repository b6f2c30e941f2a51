package org.vllmrouter.kv;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One block in a {@link RadixTree}: its key, its children, and which sources hold it in which
 * tier. Readers walk nodes without locks: every field a reader follows is final, a volatile
 * word, or a volatile reference to an array that is never changed after publication (copy on
 * write).
 */
final class Node {

    /** Children are a small array (linear scan) until this many, then a hash map. */
    private static final int ARRAY_CHILDREN = 16;
    private static final long[] NO_CLAIMS = new long[0];
    private static final int TIERS = Tier.ALL.length;

    final long key;
    final Node parent;
    /**
     * null, the only child itself (most nodes: a prompt is a chain), a {@code Node[]} or a
     * {@code ConcurrentHashMap<Long, Node>}. Keeping a lone child inline saves a lookup one
     * memory load on every level of a lookup.
     */
    private volatile Object children;
    // One bit per source slot and tier. The first 64 slots sit in the node itself (a lookup reads
    // them with the node); more sources of one model than that spill into a copy-on-write array,
    // overflow[tier * words + slot / 64 - 1]. Each word is written whole, so a reader sees every
    // tier's word before or after a change.
    private volatile long device;
    private volatile long host;
    private volatile long external;
    private volatile long disk;
    private volatile long[] overflow = NO_CLAIMS;

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

    /** The claims of slots {@code 64 * word} to {@code 64 * word + 63} in {@code tier}. */
    long claims(int tier, int word) {
        if (word == 0) {
            return switch (tier) {
                case 0 -> device;
                case 1 -> host;
                case 2 -> external;
                default -> disk;
            };
        }
        long[] o = overflow;
        int words = o.length / TIERS;
        return word - 1 < words ? o[tier * words + word - 1] : 0;
    }

    boolean holds(int slot, Tier tier) {
        return (claims(tier.ordinal(), slot >>> 6) & (1L << slot)) != 0;
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
        return (device | host | external | disk) == 0 && overflow.length == 0;
    }

    /** Writers only, under the tree's lock. */
    void claim(int slot, Tier tier) {
        change(slot, tier, true);
    }

    /** Writers only, under the tree's lock. */
    void release(int slot, Tier tier) {
        change(slot, tier, false);
    }

    private void change(int slot, Tier tier, boolean set) {
        if (holds(slot, tier) == set) {
            return;
        }
        long bit = 1L << slot;
        int word = slot >>> 6;
        if (word == 0) {
            switch (tier) {
                case DEVICE -> device ^= bit;
                case HOST -> host ^= bit;
                case EXTERNAL -> external ^= bit;
                case DISK -> disk ^= bit;
            }
            return;
        }
        long[] o = overflow;
        int words = Math.max(o.length / TIERS, word);
        long[] next = new long[words * TIERS];
        int oldWords = o.length / TIERS;
        for (int t = 0; t < TIERS; t++) {
            System.arraycopy(o, t * oldWords, next, t * words, oldWords);
        }
        next[tier.ordinal() * words + word - 1] ^= bit;
        overflow = allZero(next) ? NO_CLAIMS : next;
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
