package org.vllmrouter.kv;

import java.util.Locale;

/** Where a worker holds a block, fastest first; the policy credits a prefix hit by its tier. */
public enum Tier {
    /** GPU memory: the block is used as is. */
    DEVICE,
    /** Pinned host memory (vLLM's CPU offload): copied back before use. */
    HOST,
    /** A KV connector's store outside the worker (LMCache, Mooncake, ...). */
    EXTERNAL,
    /** Local storage: the slowest to bring back. */
    DISK;

    static final Tier[] ALL = values();

    /**
     * The tier of vLLM's {@code medium} field. Events without one come from engines that only
     * knew the GPU; a name vLLM does not define belongs to a connector's own store.
     */
    static Tier ofMedium(String medium) {
        if (medium == null || medium.equals("GPU")) {
            return DEVICE;
        }
        return switch (medium.toUpperCase(Locale.ROOT)) {
            case "GPU", "CUDA", "DEVICE" -> DEVICE;
            case "CPU", "HOST" -> HOST;
            case "STORAGE", "DISK" -> DISK;
            default -> EXTERNAL;
        };
    }
}
