package org.vllmrouter.kv;

/**
 * Decodes one batch and applies it to a source's claims: the whole batch or, when it is
 * malformed, nothing at all (the claims stay as they were). Events the index cannot use are
 * skipped one by one and counted ({@code vllm_router_kv_events_skipped_total{reason}}):
 * <ul>
 *   <li>{@code extra_keys}: the hash covers a cache salt or multimodal input, which token ids
 *       cannot match;</li>
 *   <li>{@code group}: a KV cache group other than 0 (hybrid models keep each layer kind apart;
 *       group 0 stands for the prompt);</li>
 *   <li>{@code ownership}: the block belongs to a shared pool, not to this worker;</li>
 *   <li>{@code lora}: a LoRA id without the adapter name the keys are made of;</li>
 *   <li>{@code block_size}: not the block size the source was started with;</li>
 *   <li>{@code token_count}: token ids that do not fill the blocks;</li>
 *   <li>{@code orphan}: the parent block is unknown to this source.</li>
 * </ul>
 * Not thread-safe: one per source.
 */
public final class BatchApplier {

    private final SourceClaims claims;
    private final EventBatchDecoder decoder;
    private final KvMetrics.Source metrics;
    private final int blockSize;

    public BatchApplier(SourceClaims claims, KvMetrics metrics, EventBatchDecoder decoder) {
        this.claims = claims;
        this.decoder = decoder;
        this.metrics = metrics.source(claims.source());
        this.blockSize = claims.identity().blockSize();
    }

    /**
     * Applies {@code payload} or, when it is malformed, counts the rejection and throws with the
     * claims unchanged.
     *
     * @return the number of events applied
     */
    public int apply(byte[] payload) throws MalformedBatchException {
        EventBatch batch;
        try {
            batch = decoder.decode(payload);
        } catch (MalformedBatchException e) {
            metrics.rejected(e.reason());
            throw e;
        }
        int applied = 0;
        for (KvEvent event : batch.events()) {
            if (apply(event)) {
                applied++;
            }
        }
        return applied;
    }

    private boolean apply(KvEvent event) {
        switch (event) {
            case KvEvent.BlockStored s -> {
                String skip = skipReason(s);
                if (skip != null) {
                    metrics.skipped(skip);
                    return false;
                }
                if (claims.stored(s.parentBlockHash(), s.blockHashes(), s.tokenIds(), s.loraName(),
                        Tier.ofMedium(s.medium())) == SourceClaims.StoreOutcome.ORPHAN) {
                    metrics.skipped("orphan");
                    return false;
                }
                metrics.stored.inc();
            }
            case KvEvent.BlockRemoved r -> {
                if (r.groupIdx() != 0) {
                    metrics.skipped("group");
                    return false;
                }
                claims.removed(r.blockHashes(), Tier.ofMedium(r.medium()));
                metrics.removed.inc();
            }
            case KvEvent.AllBlocksCleared c -> {
                claims.cleared();
                metrics.cleared.inc();
            }
        }
        return true;
    }

    private String skipReason(KvEvent.BlockStored s) {
        if (s.extraKeys()) {
            return "extra_keys";
        }
        if (s.groupIdx() != 0) {
            return "group";
        }
        if (s.ownership()) {
            return "ownership";
        }
        if (s.loraId() != null && s.loraName() == null) {
            return "lora";
        }
        if (s.blockSize() != blockSize) {
            return "block_size";
        }
        if (s.tokenIds().length != s.blockHashes().length * blockSize) {
            return "token_count";
        }
        return null;
    }
}
