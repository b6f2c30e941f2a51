package org.vllmrouter.mock.rollout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class EngineModelTest {
    private static final CostConstants COSTS = CostConstants.LLAMA_8B_H100;

    /** A context of {@code tokens} tokens owned by {@code owner}; two owners share the first {@code shared} tokens. */
    private static long[] context(long owner, int tokens, int shared) {
        long[] hashes = new long[tokens / COSTS.blockSize()];
        long chain = 0;
        for (int b = 0; b < hashes.length; b++) {
            chain = Mixing.mix(chain, (b + 1) * COSTS.blockSize() <= shared ? -1 : owner * 1_000_003 + b);
            hashes[b] = chain;
        }
        return hashes;
    }

    private static EngineRequest request(long owner, int prompt, int output) {
        return new EngineRequest(context(owner, prompt + output, 0), prompt, output,
                new EngineRequest.ComputeHistory(), owner);
    }

    /** Steps {@code engine} until it is idle; returns the seconds it took. */
    private static double drain(EngineModel engine, List<EngineRequest> finished) {
        double seconds = 0;
        while (engine.hasWork()) {
            seconds += engine.startStep();
            finished.addAll(engine.finishStep());
        }
        return seconds;
    }

    @Test
    void aCachedPrefixIsNotComputedAgainAndCostsLess() {
        EngineModel engine = new EngineModel(COSTS, 10_000);
        EngineRequest.ComputeHistory history = new EngineRequest.ComputeHistory();
        long[] hashes = context(1, 20_000, 0);
        engine.submit(new EngineRequest(hashes, 12_000, 50, history, "turn 0"));
        double cold = drain(engine, new ArrayList<>());
        EngineRequest next = new EngineRequest(hashes, 12_100, 50, history, "turn 1");
        engine.submit(next);
        double warm = drain(engine, new ArrayList<>());
        assertTrue(warm < cold / 2, "warm " + warm + " s, cold " + cold + " s");
        assertEquals(12_048, next.hitTokens());
        assertEquals(24_100, engine.promptTokens());
        assertEquals(12_048, engine.hitTokens());
        assertTrue(engine.recomputedTokens() < COSTS.blockSize(), "only the partial last block is computed again");
    }

    @Test
    void aLongPromptIsPrefilledInChunksOfTheTokenBudget() {
        EngineModel engine = new EngineModel(COSTS, 10_000);
        engine.submit(request(1, 20_000, 1));
        List<EngineRequest> finished = new ArrayList<>();
        int steps = 0;
        while (finished.isEmpty()) {
            engine.startStep();
            finished.addAll(engine.finishStep());
            steps++;
        }
        assertEquals(3, steps);
    }

    @Test
    void aDecodeStepSlowsAsTheBatchGrows() {
        assertTrue(decodeStepSeconds(32) > decodeStepSeconds(1));
        assertTrue(decodeStepSeconds(128) > decodeStepSeconds(32));
    }

    /** Seconds of a step in which {@code batch} requests of 4,000-token contexts all decode. */
    private static double decodeStepSeconds(int batch) {
        EngineModel engine = new EngineModel(COSTS, 100_000);
        for (int i = 0; i < batch; i++) {
            engine.submit(request(i, 4_000, 100));
        }
        while (true) {
            double seconds = engine.startStep();
            engine.finishStep();
            if (engine.steps() > batch) {
                return seconds;
            }
        }
    }

    @Test
    void requestsOutgrowingTheCacheArePreemptedAndRecomputedAndStillFinish() {
        EngineModel engine = new EngineModel(COSTS, 400);
        for (int i = 0; i < 8; i++) {
            assertTrue(engine.submit(request(i, 500, 400)));
        }
        List<EngineRequest> finished = new ArrayList<>();
        drain(engine, finished);
        assertEquals(8, finished.size());
        assertTrue(engine.preemptions() > 0);
        assertTrue(engine.recomputedTokens() > 0);
    }

    @Test
    void nothingIsPreemptedWhenEverythingFits() {
        EngineModel engine = new EngineModel(COSTS, 1_000);
        for (int i = 0; i < 8; i++) {
            engine.submit(request(i, 500, 400));
        }
        drain(engine, new ArrayList<>());
        assertEquals(0, engine.preemptions());
        assertEquals(0, engine.recomputedTokens());
    }

    @Test
    void theLeastRecentlyFreedContextIsEvictedFirstTailBeforeHead() {
        EngineModel engine = new EngineModel(COSTS, 200);
        long[] first = context(1, 1_600, 0);
        long[] second = context(2, 1_600, 0);
        long[] third = context(3, 1_600, 0);
        for (long[] hashes : List.of(first, second, third)) {
            engine.submit(new EngineRequest(hashes, 1_599, 1, new EngineRequest.ComputeHistory(), null));
            drain(engine, new ArrayList<>());
        }
        assertEquals(16, engine.cachedPrefixTokens(first, 1_600));
        assertEquals(1_584, engine.cachedPrefixTokens(second, 1_600));
        assertEquals(1_584, engine.cachedPrefixTokens(third, 1_600));
    }

    @Test
    void samplesSharingAPromptShareItsBlocks() {
        EngineModel engine = new EngineModel(COSTS, 10_000);
        int shared = 1_600;
        engine.submit(new EngineRequest(context(1, 2_000, shared), shared, 1, new EngineRequest.ComputeHistory(), 1));
        drain(engine, new ArrayList<>());
        EngineRequest sibling = new EngineRequest(context(2, 2_000, shared), shared, 1,
                new EngineRequest.ComputeHistory(), 2);
        engine.submit(sibling);
        drain(engine, new ArrayList<>());
        assertEquals(shared - COSTS.blockSize(), sibling.hitTokens());
    }

    @Test
    void aRequestLargerThanTheWholeCacheIsRefused() {
        EngineModel engine = new EngineModel(COSTS, 10);
        assertFalse(engine.submit(request(1, 200, 1)));
        assertFalse(engine.hasWork());
        assertTrue(engine.submit(request(1, 100, 1)));
    }

    @Test
    void anAbortedRequestFreesItsBlocksIntoTheCacheAndNeverFinishes() {
        EngineModel engine = new EngineModel(COSTS, 1_000);
        EngineRequest left = request(1, 1_000, 500);
        engine.submit(left);
        engine.startStep();
        engine.finishStep();
        assertTrue(engine.usedBlocks() > 0);
        assertTrue(engine.abort(left));
        assertEquals(0, engine.usedBlocks());
        assertEquals(0, engine.runningCount());
        assertFalse(engine.hasWork());
        assertFalse(engine.abort(left), "already gone");
        EngineRequest again = request(1, 1_000, 1);
        engine.submit(again);
        drain(engine, new ArrayList<>());
        assertEquals(992, again.hitTokens(), "its computed prompt stayed cached");
    }

    @Test
    void theListenerHearsEachBlockRegisteredOnceAndEachEviction() {
        List<Long> stored = new ArrayList<>();
        List<Long> removed = new ArrayList<>();
        EngineModel engine = new EngineModel(COSTS, 100, new EngineModel.CacheListener() {
            @Override
            public void stored(EngineRequest request, int block) {
                stored.add(request.blockHash(block));
            }

            @Override
            public void removed(long hash) {
                removed.add(hash);
            }
        });
        engine.submit(request(1, 800, 1));
        drain(engine, new ArrayList<>());
        assertEquals(50, stored.size(), "800 prompt tokens fill 50 blocks");
        assertEquals(List.of(), removed);
        engine.submit(request(2, 800, 1));
        drain(engine, new ArrayList<>());
        assertEquals(100, stored.size());
        engine.submit(request(3, 800, 1));
        drain(engine, new ArrayList<>());
        assertEquals(50, removed.size(), "the third context evicts as many blocks as it needs");
        assertTrue(stored.subList(0, 50).containsAll(removed), "the least recently freed context goes first");
    }
}
