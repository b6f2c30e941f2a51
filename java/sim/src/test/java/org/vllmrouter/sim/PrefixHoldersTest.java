package org.vllmrouter.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.EngineModel;
import org.vllmrouter.mock.rollout.EngineRequest;
import org.vllmrouter.mock.rollout.Trajectory;
import org.vllmrouter.mock.rollout.Turn;
import org.vllmrouter.mock.rollout.Workload;
import org.vllmrouter.mock.rollout.WorkloadShape;

class PrefixHoldersTest {
    private static final CostConstants COSTS = CostConstants.LLAMA_8B_H100;

    /** Workers with small caches (so blocks are evicted too) take turns at random; the index answers as they do. */
    @Test
    void everyWorkersPrefixIsWhatItsOwnCacheSays() {
        Workload workload = Workload.generate(WorkloadShape.of(6, 4), 7);
        PreparedWorkload prepared = PreparedWorkload.of(workload, COSTS);
        int workers = 70;
        PrefixHolders holders = new PrefixHolders(workers, COSTS.blockSize());
        EngineModel[] engines = new EngineModel[workers];
        for (int w = 0; w < workers; w++) {
            engines[w] = new EngineModel(COSTS, 400, holders.listenerFor(w));
        }
        List<Trajectory> trajectories = workload.trajectories();
        Random random = new Random(11);
        int[] tokens = new int[workers];
        boolean someShared = false;
        for (int i = 0; i < 600; i++) {
            int t = random.nextInt(trajectories.size());
            List<Turn> turns = trajectories.get(t).turns();
            Turn turn = turns.get(random.nextInt(turns.size()));
            long[] hashes = prepared.blockHashes().get(t);
            EngineModel engine = engines[random.nextInt(random.nextBoolean() ? 3 : workers)];
            if (engine.submit(new EngineRequest(hashes, turn.promptTokens(), turn.outputTokens(),
                    new EngineRequest.ComputeHistory(), null))) {
                while (engine.hasWork()) {
                    engine.startStep();
                    engine.finishStep();
                }
            }
            holders.cachedPrefixTokens(hashes, turn.promptTokens(), tokens);
            int[] expected = new int[workers];
            int holding = 0;
            for (int w = 0; w < workers; w++) {
                expected[w] = engines[w].cachedPrefixTokens(hashes, turn.promptTokens());
                holding += expected[w] > 0 ? 1 : 0;
            }
            assertArrayEquals(expected, tokens, "after turn " + i);
            someShared |= holding > 1;
        }
        assertTrue(someShared, "the shared system prompt is held by several workers");
    }
}
