package org.vllmrouter.mock.rollout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class WorkloadTest {
    private static final Workload LARGE = Workload.generate(WorkloadShape.of(500, 8), 7);

    @Test
    void theSameSeedGivesTheSameBatchAndAnotherSeedAnother() {
        WorkloadShape shape = WorkloadShape.of(20, 4).withAbandonShare(0.2);
        assertEquals(Workload.generate(shape, 42), Workload.generate(shape, 42));
        assertNotEquals(Workload.generate(shape, 42), Workload.generate(shape, 43));
    }

    @Test
    void aTrajectoryDoesNotChangeWhenTheBatchAroundItGrows() {
        Workload small = Workload.generate(WorkloadShape.of(2, 2), 5);
        Workload big = Workload.generate(WorkloadShape.of(10, 4), 5);
        assertEquals(small.trajectories().get(0), big.trajectories().get(0));
        assertEquals(small.trajectories().get(3).turns(), big.trajectories().get(5).turns());
    }

    @Test
    void sessionIdsAreInstanceAndRepetitionAndGroupsHoldTheirSamples() {
        Workload w = Workload.generate(WorkloadShape.of(3, 4), 1);
        assertEquals("task00002_3", w.trajectories().get(11).sessionId());
        assertEquals(List.of("task00000", "task00001", "task00002"), List.copyOf(w.groups().keySet()));
        w.groups().values().forEach(samples -> {
            assertEquals(4, samples.size());
            assertEquals(1, samples.stream().map(Trajectory::taskTokens).distinct().count());
        });
    }

    @Test
    void theFirstPromptIsSystemAndTaskAndTheContextGrowsEveryTurn() {
        for (Trajectory t : LARGE.trajectories()) {
            assertEquals(t.systemTokens() + t.taskTokens(), t.turns().get(0).promptTokens());
            for (int k = 1; k < t.turns().size(); k++) {
                Turn before = t.turns().get(k - 1);
                assertTrue(t.turns().get(k).promptTokens() > before.promptTokens() + before.outputTokens());
            }
        }
    }

    @Test
    void turnCountsAreHeavyTailedWithAMeanNearFourAndACapOfThirty() {
        int[] turns = LARGE.trajectories().stream().mapToInt(t -> t.turns().size()).toArray();
        double mean = Arrays.stream(turns).average().orElseThrow();
        assertTrue(mean > 3.4 && mean < 4.6, "mean turns " + mean);
        assertEquals(30, Arrays.stream(turns).max().orElseThrow());
        long single = Arrays.stream(turns).filter(n -> n == 1).count();
        assertTrue(single > turns.length * 0.4 && single < turns.length * 0.6, "single-turn " + single);
    }

    @Test
    void outputsAndThinkTimesAreLogNormalAroundTheirMedians() {
        double[] outputs = LARGE.trajectories().stream().flatMap(t -> t.turns().stream())
                .mapToDouble(Turn::outputTokens).sorted().toArray();
        double medianOutput = outputs[outputs.length / 2];
        assertTrue(medianOutput > 170 && medianOutput < 230, "median output " + medianOutput);
        assertTrue(outputs[outputs.length - 1] > 4 * medianOutput, "a long right tail");
        double[] think = LARGE.trajectories().stream().flatMap(t -> t.turns().stream().skip(1))
                .mapToDouble(Turn::delaySeconds).sorted().toArray();
        double medianThink = think[think.length / 2];
        assertTrue(medianThink > 0.4 && medianThink < 0.6, "median think " + medianThink);
        assertTrue(think[(int) (think.length * 0.95)] > 2.0, "p95 think time in seconds");
    }

    @Test
    void theAbandonShareIsTheShareOfTrajectoriesThatEndMidTurn() {
        Workload w = Workload.generate(WorkloadShape.of(500, 4).withAbandonShare(0.1), 3);
        long abandoned = w.trajectories().stream().filter(Trajectory::abandoned).count();
        assertTrue(abandoned > 150 && abandoned < 250, "abandoned " + abandoned);
        assertEquals(0, LARGE.trajectories().stream().filter(Trajectory::abandoned).count());
        w.trajectories().forEach(t -> assertTrue(
                IntStream.range(0, t.turns().size() - 1).noneMatch(k -> t.turns().get(k).abandoned())));
    }

    @Test
    void samplesOfAGroupShareTheFirstPromptsBlocksAndNothingOwn() {
        Workload w = Workload.generate(WorkloadShape.of(2, 2), 9);
        Trajectory a = w.trajectories().get(0);
        Trajectory b = w.trajectories().get(1);
        Trajectory other = w.trajectories().get(2);
        long[] ha = PromptContent.blockHashes(a, 16);
        long[] hb = PromptContent.blockHashes(b, 16);
        long[] ho = PromptContent.blockHashes(other, 16);
        int shared = (a.systemTokens() + a.taskTokens()) / 16;
        assertTrue(Arrays.equals(ha, 0, shared, hb, 0, shared));
        assertNotEquals(ha[shared], hb[shared]);
        int system = a.systemTokens() / 16;
        assertTrue(Arrays.equals(ha, 0, system, ho, 0, system));
        assertNotEquals(ha[system], ho[system]);
        assertEquals(PromptContent.text(a, 100), PromptContent.text(b, 100));
        assertEquals(100, PromptContent.text(a, 100).length());
    }

    @Test
    void theLongShapesContextsReachTheTensOfThousandsAndNoneOutgrowsItsWindow() {
        Workload w = Workload.generate(WorkloadShape.longAgentic(512, 8), 7);
        int[] contexts = w.trajectories().stream().mapToInt(Trajectory::finalContextTokens).sorted().toArray();
        assertTrue(contexts[contexts.length - 1] > 90_000, "longest context " + contexts[contexts.length - 1]);
        assertTrue(Arrays.stream(contexts).filter(c -> c > 50_000).count() > contexts.length / 20,
                "a tail of contexts past 50k tokens");
        assertTrue(contexts[contexts.length - 1] <= WorkloadShape.LONG_CONTEXT_WINDOW);
        int[] turns = w.trajectories().stream().mapToInt(t -> t.turns().size()).sorted().toArray();
        assertTrue(turns[turns.length / 2] <= 3, "median turns " + turns[turns.length / 2]);
        assertTrue(turns[turns.length - 1] > 30, "most turns " + turns[turns.length - 1]);
        for (Trajectory t : w.trajectories()) {
            assertEquals(2000, t.systemTokens());
            assertEquals(t.systemTokens() + t.taskTokens(), t.turns().get(0).promptTokens());
        }
    }

    @Test
    void aWindowEndsATrajectoryAtTheFirstTurnThatWouldPassIt() {
        WorkloadShape windowed = WorkloadShape.longAgentic(64, 8);
        WorkloadShape open = new WorkloadShape(64, 8, windowed.systemTokens(), windowed.taskTokens(),
                windowed.maxTurns(), windowed.turnTailIndex(), windowed.outputTokens(), windowed.toolTokens(),
                windowed.thinkSeconds(), 0.0, WorkloadShape.NO_WINDOW);
        List<Trajectory> cut = Workload.generate(windowed, 3).trajectories();
        List<Trajectory> whole = Workload.generate(open, 3).trajectories();
        int shortened = 0;
        for (int i = 0; i < cut.size(); i++) {
            List<Turn> kept = cut.get(i).turns();
            List<Turn> all = whole.get(i).turns();
            assertEquals(all.subList(0, kept.size()), kept, "the window keeps a prefix of the turns");
            if (kept.size() < all.size()) {
                shortened++;
                Turn next = all.get(kept.size());
                assertTrue(next.promptTokens() + next.outputTokens() > windowed.contextWindow());
            }
        }
        assertTrue(shortened > 0, "some trajectory reaches the window");
    }

    @Test
    void atTheBenchsSizeHighPressureLeavesEachWorkerRoomForSeveralOfTheLongestContexts() {
        Workload w = Workload.generate(WorkloadShape.longAgentic(512, 8), 1);
        long workerTokens = (long) Pressure.HIGH.blocksPerWorker(w, 64, CostConstants.LLAMA_8B_H100)
                * CostConstants.LLAMA_8B_H100.blockSize();
        assertTrue(workerTokens >= 4L * WorkloadShape.LONG_CONTEXT_WINDOW, workerTokens + " tokens a worker");
        assertEquals(w.workingSetTokens() / 2.0 / 64, workerTokens, CostConstants.LLAMA_8B_H100.blockSize(),
                "the pressure is the named one, not raised to fit the largest context");
    }

    @Test
    void shapesMustBePositive() {
        assertEquals("groups must be > 0, got 0",
                assertThrows(IllegalArgumentException.class, () -> WorkloadShape.of(0, 4)).getMessage());
        assertEquals("samples must be > 0, got -1",
                assertThrows(IllegalArgumentException.class, () -> WorkloadShape.of(4, -1)).getMessage());
        WorkloadShape s = WorkloadShape.longAgentic(4, 4);
        assertEquals("context window must be > 0, got 0", assertThrows(IllegalArgumentException.class,
                () -> new WorkloadShape(4, 4, s.systemTokens(), s.taskTokens(), s.maxTurns(), s.turnTailIndex(),
                        s.outputTokens(), s.toolTokens(), s.thinkSeconds(), 0.0, 0)).getMessage());
    }
}
