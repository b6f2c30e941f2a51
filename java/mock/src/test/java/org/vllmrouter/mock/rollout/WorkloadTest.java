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
    void shapesMustBePositive() {
        assertEquals("groups must be > 0, got 0",
                assertThrows(IllegalArgumentException.class, () -> WorkloadShape.of(0, 4)).getMessage());
        assertEquals("samples must be > 0, got -1",
                assertThrows(IllegalArgumentException.class, () -> WorkloadShape.of(4, -1)).getMessage());
    }
}
