package org.vllmrouter.kv;

import java.util.Objects;

/**
 * What makes two workers' prefix caches comparable: the model they serve and the number of
 * tokens per KV block. Each identity has its own tree in {@link KvIndex}.
 *
 * @param model the model id the workers report ({@code /get_server_info} {@code model_id})
 * @param blockSize tokens per block ({@code kv_block_size})
 */
public record CacheIdentity(String model, int blockSize) {

    public CacheIdentity {
        Objects.requireNonNull(model, "model");
        if (blockSize < 1) {
            throw new IllegalArgumentException("block size must be >= 1, got " + blockSize);
        }
    }
}
