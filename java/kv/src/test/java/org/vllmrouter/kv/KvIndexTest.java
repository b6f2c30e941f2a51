package org.vllmrouter.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.vllmrouter.kv.Msgpack.batch;
import static org.vllmrouter.kv.Msgpack.cleared;
import static org.vllmrouter.kv.Msgpack.removed;
import static org.vllmrouter.kv.Msgpack.stored;
import static org.vllmrouter.kv.Msgpack.tokens;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The index through decoded batches, as a subscriber drives it; the first four are upstream's own cases. */
class KvIndexTest {

    static final CacheIdentity MODEL = new CacheIdentity("m", 4);
    static final String A = "http://a:8000";
    static final String B = "http://b:8000";
    static final int[] PROMPT = tokens(100, 9);

    final KvMetrics metrics = new KvMetrics(new PrometheusRegistry());
    final KvIndex index = new KvIndex(1_000, metrics);
    final BatchApplier a = applier(A);
    final BatchApplier b = applier(B);

    BatchApplier applier(String worker) {
        return new BatchApplier(index.claims(MODEL, new SourceId(worker, 0)), metrics, new EventBatchDecoder());
    }

    PrefixMatch match(int[] prompt) {
        return index.match(MODEL, BlockKeys.of(prompt, MODEL.blockSize(), null), List.of(A, B));
    }

    static byte[] twoBlocks() {
        return batch(stored(new long[] {11, 12}, null, tokens(100, 8), 4, "GPU"));
    }

    @Test
    void decodedStoreGivesDepthTwo() throws Exception {
        a.apply(twoBlocks());
        PrefixMatch m = match(PROMPT);
        assertEquals(2, m.queryBlocks());
        assertEquals(2, m.blocks(A, Tier.DEVICE));
        assertEquals(0, m.blocks(B, Tier.DEVICE));
    }

    @Test
    void repeatingAStoreChangesNothing() throws Exception {
        a.apply(twoBlocks());
        a.apply(twoBlocks());
        assertEquals(2, match(PROMPT).blocks(A, Tier.DEVICE));
        assertEquals(2, index.blocks());
    }

    @Test
    void removingTheSecondBlockOfOneWorkerLeavesTheOther() throws Exception {
        a.apply(twoBlocks());
        b.apply(twoBlocks());
        a.apply(batch(removed(new long[] {12}, "GPU")));
        PrefixMatch m = match(PROMPT);
        assertEquals(1, m.blocks(A, Tier.DEVICE));
        assertEquals(2, m.blocks(B, Tier.DEVICE));
    }

    @Test
    void aClearLeavesOnlyTheOtherWorker() throws Exception {
        a.apply(twoBlocks());
        b.apply(twoBlocks());
        a.apply(batch(cleared()));
        PrefixMatch m = match(PROMPT);
        assertEquals(0, m.blocks(A, Tier.DEVICE));
        assertEquals(2, m.blocks(B, Tier.DEVICE));
        assertEquals(2, index.blocks());
    }

    @Test
    void aChildStoreFollowsItsParentByEngineHash() throws Exception {
        a.apply(batch(stored(new long[] {11}, null, tokens(100, 4), 4, "GPU")));
        a.apply(batch(stored(new long[] {12}, 11L, tokens(104, 4), 4, "GPU")));
        assertEquals(2, match(PROMPT).blocks(A, Tier.DEVICE));
    }

    @Test
    void anUnknownParentClaimsNothing() throws Exception {
        a.apply(batch(stored(new long[] {12}, 99L, tokens(104, 4), 4, "GPU")));
        assertEquals(0, index.blocks());
    }

    @Test
    void differentPromptsShareOnlyTheirCommonLeadingBlocks() throws Exception {
        a.apply(twoBlocks());
        int[] other = PROMPT.clone();
        other[5] = 7;
        assertEquals(1, match(other).blocks(A, Tier.DEVICE));
        int[] firstDiffers = PROMPT.clone();
        firstDiffers[0] = 7;
        assertEquals(0, match(firstDiffers).blocks(A, Tier.DEVICE));
    }

    @Test
    void tiersAreCountedApartAndTogether() throws Exception {
        a.apply(batch(stored(new long[] {11}, null, tokens(100, 4), 4, "GPU")));
        a.apply(batch(stored(new long[] {12}, 11L, tokens(104, 4), 4, "CPU")));
        PrefixMatch m = match(PROMPT);
        assertEquals(1, m.blocks(A, Tier.DEVICE));
        assertEquals(0, m.blocks(A, Tier.HOST), "the first block is not in host memory");
        assertEquals(1, m.blocksAtOrFaster(A, Tier.DEVICE));
        assertEquals(2, m.blocksAtOrFaster(A, Tier.HOST));
        assertEquals(2, m.blocksAtOrFaster(A, Tier.DISK));

        a.apply(batch(removed(new long[] {11}, "GPU"), stored(new long[] {11}, null, tokens(100, 4), 4, "CPU")));
        m = match(PROMPT);
        assertEquals(2, m.blocks(A, Tier.HOST));
        assertEquals(0, m.blocks(A, Tier.DEVICE));
    }

    @Test
    void aBlockInTwoTiersStaysUntilBothAreRemoved() throws Exception {
        a.apply(twoBlocks());
        a.apply(batch(stored(new long[] {11, 12}, null, tokens(100, 8), 4, "CPU")));
        a.apply(batch(removed(new long[] {11, 12}, "GPU")));
        assertEquals(2, match(PROMPT).blocks(A, Tier.HOST));
        a.apply(batch(removed(new long[] {11, 12}, "CPU")));
        assertEquals(0, match(PROMPT).blocksAtOrFaster(A, Tier.DISK));
        assertEquals(0, index.blocks(), "nodes nobody holds are freed");
    }

    @Test
    void loraAdaptersKeyTheirBlocksApart() throws Exception {
        a.apply(batch(Msgpack.map("type", "BlockStored", "block_hashes", Msgpack.u64s(11), "parent_block_hash", null,
                "token_ids", tokens(100, 4), "block_size", 4, "lora_id", 1, "medium", "GPU", "lora_name", "sql")));
        assertEquals(0, match(PROMPT).blocks(A, Tier.DEVICE));
        PrefixMatch withLora = index.match(MODEL, BlockKeys.of(PROMPT, 4, "sql"), List.of(A));
        assertEquals(1, withLora.blocks(A, Tier.DEVICE));
    }

    @Test
    void dataParallelRanksOfOneWorkerCountTheirDeepest() throws Exception {
        BatchApplier rank1 = new BatchApplier(index.claims(MODEL, new SourceId(A, 1)), metrics, new EventBatchDecoder());
        a.apply(batch(stored(new long[] {11}, null, tokens(100, 4), 4, "GPU")));
        rank1.apply(twoBlocks());
        assertEquals(2, match(PROMPT).blocks(A, Tier.DEVICE));
    }

    @Test
    void closingASourceReleasesItsClaims() throws Exception {
        SourceClaims claims = index.claims(MODEL, new SourceId("http://c:8000", 0));
        claims.stored(null, new long[] {1, 2}, tokens(100, 8), null, Tier.DEVICE);
        assertEquals(2, claims.blocks());
        assertEquals(2, index.blocks());
        claims.close();
        assertEquals(0, index.blocks());
        assertThrows(IllegalStateException.class, () -> claims.stored(null, new long[] {1}, tokens(100, 4), null, Tier.DEVICE));
    }

    @Test
    void aFullIndexTakesRoomFromTheStoringSourceLeavesFirst() throws Exception {
        KvIndex small = new KvIndex(4, metrics(new PrometheusRegistry()));
        SourceClaims x = small.claims(MODEL, new SourceId(A, 0));
        SourceClaims y = small.claims(MODEL, new SourceId(B, 0));
        y.stored(null, new long[] {1}, tokens(900, 4), null, Tier.DEVICE);
        x.stored(null, new long[] {11, 12, 13}, tokens(100, 12), null, Tier.DEVICE);
        assertEquals(4, small.blocks());
        assertEquals(SourceClaims.StoreOutcome.STORED, x.stored(null, new long[] {21}, tokens(500, 4), null, Tier.DEVICE));
        assertEquals(4, small.blocks());
        List<String> both = List.of(A, B);
        assertEquals(2, small.match(MODEL, BlockKeys.of(tokens(100, 12), 4, null), both).blocks(A, Tier.DEVICE),
                "the leaf of A's oldest prefix went");
        assertEquals(1, small.match(MODEL, BlockKeys.of(tokens(500, 4), 4, null), both).blocks(A, Tier.DEVICE));
        assertEquals(1, small.match(MODEL, BlockKeys.of(tokens(900, 4), 4, null), both).blocks(B, Tier.DEVICE),
                "another source's claims are never taken");
    }

    @Test
    void aFullIndexRefusesWhatTheStoringSourceCannotMakeRoomFor() {
        KvIndex small = new KvIndex(2, metrics(new PrometheusRegistry()));
        SourceClaims y = small.claims(MODEL, new SourceId(B, 0));
        y.stored(null, new long[] {1, 2}, tokens(900, 8), null, Tier.DEVICE);
        SourceClaims x = small.claims(MODEL, new SourceId(A, 0));
        assertEquals(SourceClaims.StoreOutcome.PARTIAL, x.stored(null, new long[] {11}, tokens(100, 4), null, Tier.DEVICE));
        assertEquals(2, small.blocks());
    }

    static KvMetrics metrics(PrometheusRegistry registry) {
        return new KvMetrics(registry);
    }
}
