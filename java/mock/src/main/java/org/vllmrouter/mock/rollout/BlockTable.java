package org.vllmrouter.mock.rollout;

/**
 * The prefix cache's index, block hash to block, as open addressing over primitive keys: the simulator looks up
 * every block of every prompt, and a boxed map's pointer chase per lookup dominated its run time.
 */
final class BlockTable {
    private long[] keys = new long[1024];
    private EngineModel.Block[] values = new EngineModel.Block[1024];
    private int size;

    EngineModel.Block get(long key) {
        int mask = keys.length - 1;
        for (int i = slot(key, mask); values[i] != null; i = (i + 1) & mask) {
            if (keys[i] == key) {
                return values[i];
            }
        }
        return null;
    }

    boolean containsKey(long key) {
        return get(key) != null;
    }

    void put(long key, EngineModel.Block value) {
        if ((size + 1) * 2 > keys.length) {
            grow();
        }
        int mask = keys.length - 1;
        int i = slot(key, mask);
        while (values[i] != null) {
            if (keys[i] == key) {
                values[i] = value;
                return;
            }
            i = (i + 1) & mask;
        }
        keys[i] = key;
        values[i] = value;
        size++;
    }

    /** Removes {@code key}, shifting later entries of its probe run back so lookups never stop short. */
    void remove(long key) {
        int mask = keys.length - 1;
        int i = slot(key, mask);
        while (values[i] != null && keys[i] != key) {
            i = (i + 1) & mask;
        }
        if (values[i] == null) {
            return;
        }
        size--;
        int gap = i;
        for (int j = (gap + 1) & mask; values[j] != null; j = (j + 1) & mask) {
            int home = slot(keys[j], mask);
            // Move j into the gap unless its home lies cyclically in (gap, j].
            boolean stays = gap <= j ? (gap < home && home <= j) : (gap < home || home <= j);
            if (!stays) {
                keys[gap] = keys[j];
                values[gap] = values[j];
                gap = j;
            }
        }
        values[gap] = null;
    }

    int size() {
        return size;
    }

    private void grow() {
        long[] oldKeys = keys;
        EngineModel.Block[] oldValues = values;
        keys = new long[oldKeys.length * 2];
        values = new EngineModel.Block[oldKeys.length * 2];
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldValues[i] != null) {
                put(oldKeys[i], oldValues[i]);
            }
        }
    }

    private static int slot(long key, int mask) {
        return (int) (Mixing.mix(key) & mask);
    }
}
