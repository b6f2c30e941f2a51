package org.vllmrouter.kv;

import java.util.concurrent.atomic.AtomicLong;

/** The number of blocks (tree nodes) all trees of one {@link KvIndex} may hold together. */
final class IndexBudget {

    private final long max;
    private final AtomicLong used = new AtomicLong();

    IndexBudget(long max) {
        if (max < 1) {
            throw new IllegalArgumentException("block budget must be >= 1, got " + max);
        }
        this.max = max;
    }

    boolean take() {
        long n;
        do {
            n = used.get();
            if (n >= max) {
                return false;
            }
        } while (!used.compareAndSet(n, n + 1));
        return true;
    }

    void giveBack() {
        used.decrementAndGet();
    }

    long used() {
        return used.get();
    }

    long max() {
        return max;
    }
}
