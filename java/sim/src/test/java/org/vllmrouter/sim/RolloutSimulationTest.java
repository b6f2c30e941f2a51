package org.vllmrouter.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.Pressure;
import org.vllmrouter.mock.rollout.Workload;
import org.vllmrouter.mock.rollout.WorkloadShape;

class RolloutSimulationTest {
    private static final Workload WORKLOAD = Workload.generate(WorkloadShape.of(16, 8), 3);
    private static final PreparedWorkload PREPARED = PreparedWorkload.of(WORKLOAD, CostConstants.LLAMA_8B_H100);

    private static SimulationResult run(String policy, Pressure pressure) {
        return new RolloutSimulation(PREPARED, policy, 8, pressure).run();
    }

    @Test
    void everyPolicyServesEveryTurn() {
        for (String policy : WorkloadOptions.DEFAULT_POLICIES.split(",")) {
            SimulationResult r = run(policy, Pressure.MODERATE);
            assertEquals(WORKLOAD.turnCount(), r.turns(), policy);
            assertEquals(0, r.errors(), policy);
            assertTrue(r.groupP50() <= r.groupP90() && r.groupP90() <= r.groupMax(), policy);
            assertEquals(r.makespan(), r.groupMax(), 1e-9, "every trajectory starts at 0: " + policy);
            assertTrue(r.imbalance() >= 1.0, policy);
        }
    }

    @Test
    void theSameInputsGiveTheSameResult() {
        assertEquals(run("sticky_least_loaded", Pressure.HIGH), run("sticky_least_loaded", Pressure.HIGH));
        assertEquals(run("kv_aware", Pressure.HIGH), run("kv_aware", Pressure.HIGH));
    }

    @Test
    void stickySessionsFindTheirContextWhereRoundRobinRecomputesIt() {
        SimulationResult sticky = run("sticky_least_loaded", Pressure.LOW);
        SimulationResult roundRobin = run("round_robin", Pressure.LOW);
        assertTrue(sticky.prefixHitRate() > roundRobin.prefixHitRate() + 0.2,
                sticky.prefixHitRate() + " vs " + roundRobin.prefixHitRate());
        assertTrue(sticky.recomputedTokens() * 10 < roundRobin.recomputedTokens());
        SimulationResult balanced = run("sticky_balanced", Pressure.LOW);
        assertTrue(balanced.prefixHitRate() > roundRobin.prefixHitRate() + 0.2,
                balanced.prefixHitRate() + " vs " + roundRobin.prefixHitRate());
    }

    @Test
    void atLowPressureStickyBalancedMovesNoSessionAndRecomputesNoMoreThanStickyLeastLoaded() {
        PreparedWorkload batch = PreparedWorkload.of(Workload.generate(WorkloadShape.of(128, 8), 1),
                CostConstants.LLAMA_8B_H100);
        RolloutSimulation balanced = new RolloutSimulation(batch, "sticky_balanced", 16, Pressure.LOW);
        SimulationResult balancedResult = balanced.run();
        SimulationResult sticky = new RolloutSimulation(batch, "sticky_least_loaded", 16, Pressure.LOW).run();
        assertEquals(0, balanced.trajectories().stream().mapToInt(TrajectoryRecord::workerChanges).sum(),
                "the start's prefill burst queues requests with every cache mostly free");
        assertTrue(balancedResult.recomputedTokens() <= sticky.recomputedTokens(),
                balancedResult.recomputedTokens() + " vs " + sticky.recomputedTokens());
    }

    @Test
    void kvAwareIsToldWhatEachWorkerHolds() {
        SimulationResult kvAware = run("kv_aware", Pressure.LOW);
        SimulationResult roundRobin = run("round_robin", Pressure.LOW);
        assertTrue(kvAware.prefixHitRate() > roundRobin.prefixHitRate() + 0.2,
                kvAware.prefixHitRate() + " vs " + roundRobin.prefixHitRate());
    }

    @Test
    void morePressureLosesMoreContext() {
        SimulationResult low = run("sticky_least_loaded", Pressure.LOW);
        SimulationResult high = run("sticky_least_loaded", new Pressure("4", 4));
        assertTrue(high.kvBlocksPerWorker() < low.kvBlocksPerWorker());
        assertTrue(high.recomputedTokens() > low.recomputedTokens());
        assertTrue(high.prefixHitRate() < low.prefixHitRate());
    }

    @Test
    void abandonedTrajectoriesEndTheirGroupsWithoutErrors() {
        Workload w = Workload.generate(WorkloadShape.of(16, 8).withAbandonShare(0.5), 3);
        SimulationResult r = new RolloutSimulation(PreparedWorkload.of(w, CostConstants.LLAMA_8B_H100),
                "sticky_least_loaded", 8, Pressure.MODERATE).run();
        assertEquals(w.turnCount(), r.turns());
        assertEquals(0, r.errors());
    }

    @Test
    void anUnknownPolicyOrNoWorkersIsRefused() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> run("fastest", Pressure.LOW)).getMessage()
                .startsWith("Unknown policy 'fastest'"));
        assertEquals("workers must be > 0, got 0", assertThrows(IllegalArgumentException.class,
                () -> new RolloutSimulation(PREPARED, "round_robin", 0, Pressure.LOW)).getMessage());
    }
}
