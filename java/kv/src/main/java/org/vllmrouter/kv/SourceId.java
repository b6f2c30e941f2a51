package org.vllmrouter.kv;

import java.util.Objects;

/**
 * One KV-event publisher: a worker (its URL, as the router names it) and one of its
 * data-parallel ranks, each of which publishes on its own socket.
 */
public record SourceId(String worker, int rank) {

    public SourceId {
        Objects.requireNonNull(worker, "worker");
        if (rank < 0) {
            throw new IllegalArgumentException("data-parallel rank must be >= 0, got " + rank);
        }
    }

    @Override
    public String toString() {
        return worker + "#" + rank;
    }
}
