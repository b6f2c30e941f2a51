package org.vllmrouter.mock.rollout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PressureTest {
    private static final CostConstants COSTS = CostConstants.LLAMA_8B_H100;

    @Test
    void namedLevelsAndRatiosParse() {
        assertEquals(0.5, Pressure.parse("low").ratio());
        assertEquals(1.0, Pressure.parse("Moderate").ratio());
        assertEquals(2.0, Pressure.parse("high").ratio());
        assertEquals(1.5, Pressure.parse("1.5").ratio());
        assertEquals("pressure must be low, moderate, high or a ratio > 0, got 'extreme'",
                assertThrows(IllegalArgumentException.class, () -> Pressure.parse("extreme")).getMessage());
        assertThrows(IllegalArgumentException.class, () -> Pressure.parse("0"));
        assertThrows(IllegalArgumentException.class, () -> Pressure.parse("-1"));
    }

    @Test
    void doublingThePressureHalvesEachWorkersCapacity() {
        Workload w = Workload.generate(WorkloadShape.of(64, 8), 1);
        int low = Pressure.LOW.blocksPerWorker(w, 8, COSTS);
        int high = Pressure.HIGH.blocksPerWorker(w, 8, COSTS);
        assertEquals(4.0, (double) low / high, 0.01);
        assertEquals(w.workingSetTokens(), (long) high * 8 * COSTS.blockSize() * 2, 8 * COSTS.blockSize() * 2);
    }

    @Test
    void aWorkerAlwaysHoldsTheLargestTrajectory() {
        Workload w = Workload.generate(WorkloadShape.of(4, 2), 1);
        int largest = w.trajectories().stream().mapToInt(Trajectory::finalContextTokens).max().orElseThrow();
        assertTrue(new Pressure("x", 1000).blocksPerWorker(w, 64, COSTS) * COSTS.blockSize() >= largest);
    }
}
