package org.vllmrouter.mock.rollout;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A rollout batch: its trajectories, grouped by {@link Trajectory#group()} in order of first appearance. The same
 * value serves the live run, the simulator and a replayed trace.
 */
public record Workload(List<Trajectory> trajectories) {
    public Workload {
        if (trajectories.isEmpty()) {
            throw new IllegalArgumentException("a workload needs at least one trajectory");
        }
        trajectories = List.copyOf(trajectories);
    }

    /**
     * Generates {@code shape} from {@code seed}. Each group and each trajectory draws from its own stream, derived
     * from the seed and its indices, so a trajectory does not change when the batch around it grows.
     */
    public static Workload generate(WorkloadShape shape, long seed) {
        List<Trajectory> out = new ArrayList<>(shape.groups() * shape.samples());
        for (int g = 0; g < shape.groups(); g++) {
            SplittableRandom groupRandom = new SplittableRandom(Mixing.mix(seed, g, -1));
            int task = shape.taskTokens().sampleCount(groupRandom);
            String instanceId = String.format("task%05d", g);
            for (int s = 0; s < shape.samples(); s++) {
                SplittableRandom random = new SplittableRandom(Mixing.mix(seed, g, s));
                out.add(trajectory(shape, instanceId + "_" + s, task, random));
            }
        }
        return new Workload(out);
    }

    private static Trajectory trajectory(WorkloadShape shape, String sessionId, int task, SplittableRandom random) {
        int turnCount = turnCount(shape, random);
        boolean abandon = random.nextDouble() < shape.abandonShare();
        int abandonAt = abandon ? random.nextInt(turnCount) : -1;
        List<Turn> turns = new ArrayList<>(turnCount);
        int prompt = shape.systemTokens() + task;
        for (int k = 0; k < turnCount; k++) {
            double delay = k == 0 ? 0.0 : shape.thinkSeconds().sample(random);
            int output = shape.outputTokens().sampleCount(random);
            if (k > 0 && (long) prompt + output > shape.contextWindow()) {
                break;
            }
            if (k == abandonAt) {
                int generated = 1 + random.nextInt(output);
                turns.add(new Turn(delay, prompt, generated, true));
                break;
            }
            turns.add(new Turn(delay, prompt, output, false));
            prompt += output + shape.toolTokens().sampleCount(random);
        }
        return new Trajectory(sessionId, shape.systemTokens(), task, turns);
    }

    /** Pareto with the shape's tail index, capped: P(turns >= k) = k^-alpha for k up to the cap. */
    private static int turnCount(WorkloadShape shape, SplittableRandom random) {
        double u = 1.0 - random.nextDouble();
        double draw = Math.floor(Math.pow(u, -1.0 / shape.turnTailIndex()));
        return (int) Math.min(shape.maxTurns(), Math.max(1, draw));
    }

    /** The trajectories of each group, groups in order of first appearance. */
    public Map<String, List<Trajectory>> groups() {
        Map<String, List<Trajectory>> groups = new LinkedHashMap<>();
        for (Trajectory t : trajectories) {
            groups.computeIfAbsent(t.group(), g -> new ArrayList<>()).add(t);
        }
        return groups;
    }

    public int turnCount() {
        int n = 0;
        for (Trajectory t : trajectories) {
            n += t.turns().size();
        }
        return n;
    }

    /**
     * The KV the batch needs when every trajectory holds its whole context at once, shared prompts held once: the
     * longest system prompt, each group's task prompt, and every trajectory's own outputs and tool results. Pressure
     * is this over the workers' KV capacity.
     */
    public long workingSetTokens() {
        long total = 0;
        int system = 0;
        Map<String, Integer> task = new LinkedHashMap<>();
        for (Trajectory t : trajectories) {
            system = Math.max(system, t.systemTokens());
            task.merge(t.group(), t.taskTokens(), Math::max);
            total += t.finalContextTokens() - t.systemTokens() - t.taskTokens();
        }
        for (int tokens : task.values()) {
            total += tokens;
        }
        return total + system;
    }
}
