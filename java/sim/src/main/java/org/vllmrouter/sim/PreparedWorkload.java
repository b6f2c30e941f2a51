package org.vllmrouter.sim;

import java.util.List;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.PromptContent;
import org.vllmrouter.mock.rollout.Trajectory;
import org.vllmrouter.mock.rollout.Workload;

/** A workload with each trajectory's block hashes worked out once, for every policy and pressure that replays it. */
public record PreparedWorkload(Workload workload, List<long[]> blockHashes, CostConstants costs) {
    public static PreparedWorkload of(Workload workload, CostConstants costs) {
        List<long[]> hashes = workload.trajectories().stream()
                .map((Trajectory t) -> PromptContent.blockHashes(t, costs.blockSize()))
                .toList();
        return new PreparedWorkload(workload, hashes, costs);
    }
}
