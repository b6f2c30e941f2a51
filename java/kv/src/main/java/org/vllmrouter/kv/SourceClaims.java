package org.vllmrouter.kv;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What one source (worker, data-parallel rank) holds in one tree, and the only way to change
 * it. The engine's block hashes are kept here as anchors, to find a stored block's parent and
 * a removed block's node; the tree itself is keyed by {@link BlockKeys}.
 *
 * <p>Use from one thread at a time (the source's subscriber). Each change takes the tree's
 * write lock for the length of one event; readers are never blocked.
 */
public final class SourceClaims implements AutoCloseable {

    /** How many of the source's oldest claims are searched for a leaf when the budget is spent. */
    private static final int EVICTION_SCAN = 64;
    /** Claims given up per block that needs room, at most. */
    private static final int EVICTIONS_PER_BLOCK = 16;

    /** What became of a stored event. */
    public enum StoreOutcome {
        /** Every block is claimed. */
        STORED,
        /** The parent hash is unknown to this source (stored before we listened, or removed): nothing claimed. */
        ORPHAN,
        /** The index is full and this source had nothing to give up: the leading blocks are claimed, the rest not. */
        PARTIAL
    }

    private final RadixTree tree;
    private final SourceId source;
    private final int slot;
    private final KvMetrics metrics;
    private final BlockKeys keys = new BlockKeys();
    /** Engine hash to node, least recently used first: the order the budget evicts in. */
    private final LinkedHashMap<Long, Node> anchors = new LinkedHashMap<>(1024, 0.75f, true);
    /** The anchors' count after the last change, for readers on other threads (routing). */
    private volatile int heldBlocks;
    private long incarnation;
    private boolean closed;

    SourceClaims(RadixTree tree, SourceId source, KvMetrics metrics) {
        this.tree = tree;
        this.source = source;
        this.metrics = metrics;
        this.slot = tree.register(source);
    }

    public SourceId source() {
        return source;
    }

    public CacheIdentity identity() {
        return tree.identity;
    }

    RadixTree tree() {
        return tree;
    }

    /** Starts at 0 and grows with every {@link #restart()}. */
    public long incarnation() {
        return incarnation;
    }

    /** Blocks this source holds in at least one tier; any thread may ask. */
    public int blocks() {
        return heldBlocks;
    }

    /**
     * vLLM's {@code BlockStored}: {@code hashes.length} consecutive blocks whose tokens are
     * {@code tokenIds} ({@code blockSize} each), following the block {@code parentHash} (or the
     * start of a prompt when null). Storing what is already held changes nothing.
     */
    public StoreOutcome stored(Long parentHash, long[] hashes, int[] tokenIds, String loraName, Tier tier) {
        int blockSize = tree.identity.blockSize();
        if (tokenIds.length != hashes.length * blockSize) {
            throw new IllegalArgumentException(tokenIds.length + " token ids for " + hashes.length
                    + " blocks of " + blockSize);
        }
        byte[] lora = BlockKeys.lora(loraName);
        // Hashed before the lock: other sources' writers wait for it only as long as the tree changes.
        long[] blockKeys = new long[hashes.length];
        for (int b = 0; b < hashes.length; b++) {
            blockKeys[b] = keys.key(lora, tokenIds, b * blockSize, blockSize);
        }
        tree.writeLock.lock();
        try {
            ensureOpen();
            Node node = tree.root;
            if (parentHash != null) {
                node = anchors.get(parentHash);
                if (node == null) {
                    return StoreOutcome.ORPHAN;
                }
            }
            for (int b = 0; b < hashes.length; b++) {
                Node child = childWithRoom(node, blockKeys[b]);
                if (child == null) {
                    metrics.refusedBlocks(hashes.length - b);
                    return StoreOutcome.PARTIAL;
                }
                child.claim(slot, tier);
                anchors.put(hashes[b], child);
                node = child;
            }
            return StoreOutcome.STORED;
        } finally {
            heldBlocks = anchors.size();
            tree.writeLock.unlock();
        }
    }

    /** vLLM's {@code BlockRemoved}: the blocks are no longer in {@code tier}; unknown hashes are ignored. */
    public void removed(long[] hashes, Tier tier) {
        tree.writeLock.lock();
        try {
            ensureOpen();
            for (long hash : hashes) {
                Node node = anchors.get(hash);
                if (node == null) {
                    continue;
                }
                node.release(slot, tier);
                if (!node.holdsAny(slot)) {
                    anchors.remove(hash);
                    tree.prune(node);
                }
            }
        } finally {
            heldBlocks = anchors.size();
            tree.writeLock.unlock();
        }
    }

    /** vLLM's {@code AllBlocksCleared}: this source holds nothing, in any tier. Other sources keep theirs. */
    public void cleared() {
        tree.writeLock.lock();
        try {
            ensureOpen();
            releaseAll();
        } finally {
            tree.writeLock.unlock();
        }
    }

    /** The publisher restarted with an empty cache: clears, and counts a new incarnation. */
    public void restart() {
        cleared();
        incarnation++;
    }

    /** Releases every claim and the source's slot (the worker went away). Idempotent. */
    @Override
    public void close() {
        tree.writeLock.lock();
        try {
            if (closed) {
                return;
            }
            releaseAll();
            closed = true;
            tree.unregister(source, slot);
        } finally {
            tree.writeLock.unlock();
        }
    }

    private void releaseAll() {
        for (Node node : anchors.values()) {
            for (Tier t : Tier.ALL) {
                node.release(slot, t);
            }
        }
        for (Node node : anchors.values()) {
            tree.prune(node);
        }
        anchors.clear();
        heldBlocks = 0;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("claims of " + source + " are closed");
        }
    }

    /**
     * The child for {@code key}, made room for when the index is full: the source gives up its
     * own least recently anchored claims, leaves first (they free a node at once, and vLLM too
     * evicts the ends of cached prefixes first). Other sources' claims are never taken.
     */
    private Node childWithRoom(Node parent, long key) {
        Node child = tree.childFor(parent, key);
        for (int i = 0; child == null && i < EVICTIONS_PER_BLOCK && evictOne(parent); i++) {
            child = tree.childFor(parent, key);
        }
        return child;
    }

    private boolean evictOne(Node keep) {
        Map.Entry<Long, Node> victim = null;
        Map.Entry<Long, Node> oldest = null;
        Iterator<Map.Entry<Long, Node>> it = anchors.entrySet().iterator();
        for (int scanned = 0; it.hasNext() && scanned < EVICTION_SCAN; scanned++) {
            Map.Entry<Long, Node> e = it.next();
            if (e.getValue() == keep) {
                continue;
            }
            if (oldest == null) {
                oldest = e;
            }
            if (!e.getValue().hasChildren()) {
                victim = e;
                break;
            }
        }
        if (victim == null) {
            victim = oldest;
        }
        if (victim == null) {
            return false;
        }
        Node node = victim.getValue();
        anchors.remove(victim.getKey());
        for (Tier t : Tier.ALL) {
            node.release(slot, t);
        }
        tree.prune(node);
        metrics.evictedClaims(1);
        return true;
    }
}
