package org.vllmrouter.kv;

/** One event of vLLM's KV-event contract, as {@link EventBatchDecoder} reads it. */
public sealed interface KvEvent {

    /**
     * Blocks newly cached. Engine hashes are u64 (or the low 8 bytes of a byte digest).
     *
     * @param parentBlockHash the block before the first one, null at the start of a prompt
     * @param tokenIds {@code blockHashes.length * blockSize} token ids
     * @param extraKeys true when a block's hash covers more than its tokens (cache salt, images)
     * @param ownership true when the block belongs to a shared pool rather than the worker
     */
    record BlockStored(long[] blockHashes, Long parentBlockHash, int[] tokenIds, int blockSize, Long loraId,
                       String medium, String loraName, boolean extraKeys, int groupIdx, boolean ownership)
            implements KvEvent {}

    /** Blocks no longer held in {@code medium}. */
    record BlockRemoved(long[] blockHashes, String medium, int groupIdx) implements KvEvent {}

    /** The worker's prefix cache was reset. */
    record AllBlocksCleared() implements KvEvent {}
}
