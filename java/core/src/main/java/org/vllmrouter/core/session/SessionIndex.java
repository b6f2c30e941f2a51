package org.vllmrouter.core.session;

import java.util.function.BiConsumer;
import java.util.function.Predicate;

/**
 * Session id -> value, for {@link InMemorySessionTable}: open addressing with linear probing over power-of-two
 * arrays, at most half full. A lookup of a known id makes two rounds of memory reads instead of a {@link java.util.HashMap}'s
 * chain of five dependent ones (table slot, node, key String, its bytes, value): the slot's hash, key and value
 * sit at the same index of parallel arrays, so they are read together, and then the key's characters and the value,
 * again together. A probe that meets another id's hash never touches a key.
 *
 * <p>Identity is exact: a hash match is confirmed on the whole id, whose characters the index keeps (a copy, so the
 * caller's String is not retained). Removal shifts the rest of the probe run back (no tombstones), so lookups
 * never lengthen with churn and the table never needs a rebuild; it grows by doubling and does not shrink, as
 * {@link java.util.HashMap}.
 *
 * <p>Values are found again for removal by their hash and identity, so a value need not hold its id. Not
 * thread-safe: the table's lock guards it.
 */
final class SessionIndex<V> {
    private static final int INITIAL_CAPACITY = 16;

    /** Per slot the id's {@link #hash}, never 0; 0 marks an empty slot. */
    private int[] hashes = new int[INITIAL_CAPACITY];
    /** Slot i's id characters at 2i, its value at 2i + 1: one read brings both. */
    private Object[] entries = new Object[2 * INITIAL_CAPACITY];
    private int mask = INITIAL_CAPACITY - 1;
    /** 32 - log2(capacity): a slot's home is the top bits of its hash. */
    private int shift = Integer.numberOfLeadingZeros(INITIAL_CAPACITY - 1);
    private int size;

    /** The id's hash as the index stores it: String's hash spread by a Fibonacci multiply, never 0. */
    static int hash(String id) {
        int h = id.hashCode() * 0x9E3779B9;
        return h == 0 ? 1 : h;
    }

    int size() {
        return size;
    }

    /** {@code id}'s value, or null; {@code hash} is {@link #hash}{@code (id)}. */
    V get(String id, int hash) {
        int i = slotOf(id, hash);
        return i < 0 ? null : valueAt(i);
    }

    /** Adds {@code id}, which must be absent, with a non-null value. */
    void add(String id, int hash, V value) {
        if (2 * (size + 1) > hashes.length) {
            grow();
        }
        place(hash, id.toCharArray(), value);
        size++;
    }

    /** Puts {@code value} (non-null) where {@code old}, indexed under {@code hash}, was; the id stays. */
    void replace(int hash, V old, V value) {
        entries[2 * slotOfValue(hash, old) + 1] = value;
    }

    /** Removes {@code id}; its value, or null when it was absent. */
    V remove(String id, int hash) {
        int i = slotOf(id, hash);
        if (i < 0) {
            return null;
        }
        V value = valueAt(i);
        removeAt(i);
        return value;
    }

    /** Removes {@code value}, indexed under {@code hash}. */
    void removeValue(int hash, V value) {
        removeAt(slotOfValue(hash, value));
    }

    /** The first value indexed under {@code hash} for which {@code holds} is true, or null. */
    V find(int hash, Predicate<? super V> holds) {
        for (int i = hash >>> shift; hashes[i] != 0; i = (i + 1) & mask) {
            if (hashes[i] == hash && holds.test(valueAt(i))) {
                return valueAt(i);
            }
        }
        return null;
    }

    /** Each id (a new String) with its value. */
    void forEach(BiConsumer<String, V> action) {
        for (int i = 0; i < hashes.length; i++) {
            if (hashes[i] != 0) {
                action.accept(new String((char[]) entries[2 * i]), valueAt(i));
            }
        }
    }

    /**
     * Checks the structure (for tests): at most half full, the size is the number of occupied slots, each slot's hash
     * is its id's, and each entry is found from its home slot without crossing an empty one.
     */
    void checkStructure() {
        int occupied = 0;
        for (int i = 0; i < hashes.length; i++) {
            if (hashes[i] == 0) {
                require(entries[2 * i] == null && entries[2 * i + 1] == null, "empty slot " + i + " holds an entry");
                continue;
            }
            occupied++;
            String id = new String((char[]) entries[2 * i]);
            require(entries[2 * i + 1] != null, id + " has no value");
            require(hashes[i] == hash(id), id + " stored under another hash");
            require(slotOf(id, hashes[i]) == i, id + " is not found where it is");
            for (int j = hashes[i] >>> shift; j != i; j = (j + 1) & mask) {
                require(hashes[j] != 0, id + " is cut off from its home by an empty slot");
            }
        }
        require(occupied == size, "size " + size + ", occupied " + occupied);
        require(2 * size <= hashes.length, size + " ids in " + hashes.length + " slots");
    }

    private int slotOf(String id, int hash) {
        for (int i = hash >>> shift; ; i = (i + 1) & mask) {
            int h = hashes[i];
            if (h == 0) {
                return -1;
            }
            if (h == hash && sameId((char[]) entries[2 * i], id)) {
                return i;
            }
        }
    }

    private int slotOfValue(int hash, V value) {
        for (int i = hash >>> shift; ; i = (i + 1) & mask) {
            if (hashes[i] == 0) {
                throw new IllegalStateException("value not indexed");
            }
            if (entries[2 * i + 1] == value) {
                return i;
            }
        }
    }

    private static boolean sameId(char[] stored, String id) {
        if (stored.length != id.length()) {
            return false;
        }
        for (int k = 0; k < stored.length; k++) {
            if (stored[k] != id.charAt(k)) {
                return false;
            }
        }
        return true;
    }

    @SuppressWarnings("unchecked")
    private V valueAt(int i) {
        return (V) entries[2 * i + 1];
    }

    private void place(int hash, Object key, Object value) {
        int i = hash >>> shift;
        while (hashes[i] != 0) {
            i = (i + 1) & mask;
        }
        hashes[i] = hash;
        entries[2 * i] = key;
        entries[2 * i + 1] = value;
    }

    /**
     * Backward-shift deletion: each later entry of the run whose home is not between the hole and itself moves into the
     * hole, until an empty slot ends the run, so every entry stays reachable from its home.
     */
    private void removeAt(int hole) {
        for (int j = (hole + 1) & mask; hashes[j] != 0; j = (j + 1) & mask) {
            int home = hashes[j] >>> shift;
            if (((j - home) & mask) >= ((j - hole) & mask)) {
                hashes[hole] = hashes[j];
                entries[2 * hole] = entries[2 * j];
                entries[2 * hole + 1] = entries[2 * j + 1];
                hole = j;
            }
        }
        hashes[hole] = 0;
        entries[2 * hole] = null;
        entries[2 * hole + 1] = null;
        size--;
    }

    private void grow() {
        int[] oldHashes = hashes;
        Object[] oldEntries = entries;
        int capacity = 2 * oldHashes.length;
        hashes = new int[capacity];
        entries = new Object[2 * capacity];
        mask = capacity - 1;
        shift = Integer.numberOfLeadingZeros(capacity - 1);
        for (int i = 0; i < oldHashes.length; i++) {
            if (oldHashes[i] != 0) {
                place(oldHashes[i], oldEntries[2 * i], oldEntries[2 * i + 1]);
            }
        }
    }

    private static void require(boolean holds, String otherwise) {
        if (!holds) {
            throw new IllegalStateException(otherwise);
        }
    }
}
