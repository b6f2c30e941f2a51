package org.vllmrouter.kv;

import java.util.BitSet;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The residency of one {@link CacheIdentity}: a tree whose paths are block-key sequences from
 * the start of a prompt, each node marked with the sources (slots) that hold it, per tier.
 *
 * <p>Writers (one per source) take {@link #writeLock} for each change; readers never lock.
 * A reader that runs during a write sees each node before or after it, which is as good as
 * routing needs: the events themselves arrive a scheduler step late.
 */
final class RadixTree {

    final CacheIdentity identity;
    final Node root = new Node(0, null);
    final ReentrantLock writeLock = new ReentrantLock();
    private final IndexBudget budget;
    private final BitSet usedSlots = new BitSet();
    /** Longs per tier in a claims array: enough for every slot ever handed out. */
    private volatile int words = 1;
    /** The slots of each worker's ranks (copy on write). */
    private final ConcurrentHashMap<String, int[]> slotsByWorker = new ConcurrentHashMap<>();

    RadixTree(CacheIdentity identity, IndexBudget budget) {
        this.identity = identity;
        this.budget = budget;
    }

    IndexBudget budget() {
        return budget;
    }

    /** A free slot for {@code source}'s claims. */
    int register(SourceId source) {
        writeLock.lock();
        try {
            int slot = usedSlots.nextClearBit(0);
            usedSlots.set(slot);
            words = Math.max(words, (slot >>> 6) + 1);
            slotsByWorker.merge(source.worker(), new int[] {slot}, RadixTree::concat);
            return slot;
        } finally {
            writeLock.unlock();
        }
    }

    /** Frees {@code slot}; its claims must already be released. */
    void unregister(SourceId source, int slot) {
        writeLock.lock();
        try {
            usedSlots.clear(slot);
            slotsByWorker.computeIfPresent(source.worker(), (w, slots) -> {
                int[] rest = java.util.Arrays.stream(slots).filter(s -> s != slot).toArray();
                return rest.length == 0 ? null : rest;
            });
        } finally {
            writeLock.unlock();
        }
    }

    /** Under {@link #writeLock}: a child of {@code parent} for {@code key}, or null when the budget is spent. */
    Node childFor(Node parent, long key) {
        Node child = parent.child(key);
        if (child != null) {
            return child;
        }
        if (!budget.take()) {
            return null;
        }
        child = new Node(key, parent);
        parent.addChild(child);
        return child;
    }

    /** Under {@link #writeLock}: unlinks {@code node} and its ancestors while they hold nothing. */
    void prune(Node node) {
        Node n = node;
        while (n != root && n.unclaimed() && !n.hasChildren() && n.parent.removeChild(n)) {
            budget.giveBack();
            n = n.parent;
        }
    }

    /** Lock-free: the contiguous depth of {@code keys} per worker and tier. */
    PrefixMatch match(long[] keys, List<String> workers) {
        int w = words;
        int[][] slots = new int[workers.size()][];
        long[] wanted = new long[w];
        for (int i = 0; i < slots.length; i++) {
            int[] s = slotsByWorker.get(workers.get(i));
            slots[i] = s == null ? new int[0] : s;
            for (int slot : slots[i]) {
                if ((slot >>> 6) < w) {
                    wanted[slot >>> 6] |= 1L << slot;
                }
            }
        }
        int tiers = Tier.ALL.length;
        // alive[t * w + i]: slots whose blocks so far are all in exactly tier t; within[...]: in t or faster.
        long[] alive = new long[tiers * w];
        long[] within = new long[tiers * w];
        for (int t = 0; t < tiers; t++) {
            System.arraycopy(wanted, 0, alive, t * w, w);
            System.arraycopy(wanted, 0, within, t * w, w);
        }
        int slotCount = w * 64;
        int[] exactDepth = new int[tiers * slotCount];
        int[] withinDepth = new int[tiers * slotCount];
        Node node = root;
        int depth = 0;
        boolean any = !allZero(wanted);
        while (any && depth < keys.length) {
            node = node.child(keys[depth]);
            if (node == null) {
                break;
            }
            any = false;
            for (int i = 0; i < w; i++) {
                long faster = 0;
                for (int t = 0; t < tiers; t++) {
                    long held = node.claims(t, i);
                    faster |= held;
                    any |= step(alive, t * w + i, held, exactDepth, t * slotCount + i * 64, depth);
                    any |= step(within, t * w + i, faster, withinDepth, t * slotCount + i * 64, depth);
                }
            }
            depth++;
        }
        for (int t = 0; t < tiers; t++) {
            for (int i = 0; i < w; i++) {
                record(alive[t * w + i], exactDepth, t * slotCount + i * 64, depth);
                record(within[t * w + i], withinDepth, t * slotCount + i * 64, depth);
            }
        }
        int[] exact = new int[workers.size() * tiers];
        int[] atOrFaster = new int[workers.size() * tiers];
        for (int i = 0; i < slots.length; i++) {
            for (int slot : slots[i]) {
                if (slot >= slotCount) {
                    continue;
                }
                for (int t = 0; t < tiers; t++) {
                    exact[i * tiers + t] = Math.max(exact[i * tiers + t], exactDepth[t * slotCount + slot]);
                    atOrFaster[i * tiers + t] = Math.max(atOrFaster[i * tiers + t], withinDepth[t * slotCount + slot]);
                }
            }
        }
        return new PrefixMatch(identity.blockSize(), keys.length, workers, exact, atOrFaster);
    }

    /**
     * Keeps the slots of {@code masks[at]} that still hold the block; those that do not stop at
     * {@code depth}. Returns whether any slot is still matching.
     */
    private static boolean step(long[] masks, int at, long held, int[] depths, int base, int depth) {
        long before = masks[at];
        if (before == 0) {
            return false;
        }
        long after = before & held;
        record(before & ~after, depths, base, depth);
        masks[at] = after;
        return after != 0;
    }

    private static void record(long stopped, int[] depths, int base, int depth) {
        while (stopped != 0) {
            depths[base + Long.numberOfTrailingZeros(stopped)] = depth;
            stopped &= stopped - 1;
        }
    }

    private static boolean allZero(long[] words) {
        for (long x : words) {
            if (x != 0) {
                return false;
            }
        }
        return true;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
