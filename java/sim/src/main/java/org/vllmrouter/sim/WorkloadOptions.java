package org.vllmrouter.sim;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.mock.rollout.Pressure;
import org.vllmrouter.mock.rollout.Trace;
import org.vllmrouter.mock.rollout.TraceFormatException;
import org.vllmrouter.mock.rollout.Workload;
import org.vllmrouter.mock.rollout.WorkloadShape;
import picocli.CommandLine.Option;

/**
 * The options {@code simulate} and {@code rollout} share: which policies, which pressures, and the workload (generated
 * from a seed, or read from a trace). Each check throws {@link BadInput} with the whole error line.
 */
final class WorkloadOptions {
    static final String DEFAULT_POLICIES = "sticky_least_loaded,sticky_balanced,kv_aware,cache_aware,round_robin,consistent_hash";

    @Option(names = "--policies", split = ",", paramLabel = "NAME",
            description = "Policies to compare (default: " + DEFAULT_POLICIES + ").")
    List<String> policies = List.of(DEFAULT_POLICIES.split(","));

    @Option(names = "--groups", description = "Prompts in the batch (default: 256); not with --trace.")
    Integer groups;

    @Option(names = "--samples", description = "Samples per prompt, the group size (default: 16); not with --trace.")
    Integer samples;

    @Option(names = "--pressure", split = ",", paramLabel = "LEVEL",
            description = "KV pressure: low, moderate, high or a ratio; a list runs each (default: moderate).")
    List<String> pressures;

    @Option(names = "--seed", description = "Seed of the generated workload (default: 1); not with --trace.")
    Long seed;

    @Option(names = "--abandon",
            description = "Share of trajectories the client abandons mid-turn (default: 0); not with --trace.")
    Double abandon;

    @Option(names = "--trace", paramLabel = "FILE", description = "Replay this JSONL trace instead of generating.")
    Path trace;

    @Option(names = "--shape", paramLabel = "SHAPE",
            description = "The generated trajectories' sizes: default, small (fits the real-vLLM tests' tiny model), or"
                    + " long (coding-agent trajectories, contexts up to 96k tokens); not with --trace.")
    String shape;

    /** The policies, each known to the engine. */
    List<String> policies() throws BadInput {
        if (policies.contains(OraclePolicy.NAME)) {
            throw new BadInput("policy '" + OraclePolicy.NAME + "' is the simulator's perfect router (it knows every"
                    + " trajectory's length in advance) and only `simulate` runs it; a live router has no such policy");
        }
        return knownPolicies(policies);
    }

    /** The policies for {@code simulate}: each known to the engine, or the simulator's {@code oracle}. */
    List<String> simulatedPolicies() throws BadInput {
        List<String> routed = policies.stream().filter(p -> !p.equals(OraclePolicy.NAME)).toList();
        knownPolicies(routed);
        return policies;
    }

    private static List<String> knownPolicies(List<String> policies) throws BadInput {
        for (String p : policies) {
            if (!PolicyNames.isKnown(p)) {
                throw new BadInput("unknown policy '" + p + "'; expected one of " + String.join(", ", PolicyNames.ALL));
            }
        }
        return policies;
    }

    List<Pressure> pressures() throws BadInput {
        List<Pressure> levels = new ArrayList<>();
        try {
            for (String p : pressures == null ? List.of("moderate") : pressures) {
                levels.add(Pressure.parse(p));
            }
        } catch (IllegalArgumentException e) {
            throw new BadInput(e.getMessage());
        }
        return levels;
    }

    boolean pressureGiven() {
        return pressures != null;
    }

    Workload workload() throws BadInput {
        if (trace != null) {
            List<String> generating = new ArrayList<>();
            addIf(groups != null, "--groups", generating);
            addIf(samples != null, "--samples", generating);
            addIf(seed != null, "--seed", generating);
            addIf(abandon != null, "--abandon", generating);
            addIf(shape != null, "--shape", generating);
            if (!generating.isEmpty()) {
                throw new BadInput("--trace gives the workload; drop " + String.join(", ", generating));
            }
            try (Reader r = Files.newBufferedReader(trace, StandardCharsets.UTF_8)) {
                return Trace.read(r);
            } catch (TraceFormatException e) {
                throw new BadInput(trace + ": " + e.getMessage());
            } catch (IOException e) {
                throw new BadInput("cannot read trace " + trace + " (" + e.getClass().getSimpleName() + ")");
            }
        }
        int g = groups == null ? 256 : groups;
        int s = samples == null ? 16 : samples;
        if (g <= 0) {
            throw new BadInput("--groups must be > 0, got " + g);
        }
        if (s <= 0) {
            throw new BadInput("--samples must be > 0, got " + s);
        }
        WorkloadShape sized = switch (shape == null ? "default" : shape) {
            case "default" -> WorkloadShape.of(g, s);
            case "small" -> WorkloadShape.small(g, s);
            case "long" -> WorkloadShape.longAgentic(g, s);
            default -> throw new BadInput("--shape must be default, small or long, got '" + shape + "'");
        };
        try {
            return Workload.generate(sized.withAbandonShare(abandon == null ? 0 : abandon), seed());
        } catch (IllegalArgumentException e) {
            throw new BadInput(e.getMessage());
        }
    }

    private static void addIf(boolean given, String option, List<String> options) {
        if (given) {
            options.add(option);
        }
    }

    long seed() {
        return seed == null ? 1 : seed;
    }

    /** How the table's first line names the workload's origin. */
    String origin() {
        return trace == null ? "seed " + seed() : "trace " + trace;
    }

    void describe(Workload workload, ObjectNode w) {
        w.put("trajectories", workload.trajectories().size());
        w.put("groups", workload.groups().size());
        w.put("turns", workload.turnCount());
        w.put("abandoned", workload.trajectories().stream().filter(t -> t.abandoned()).count());
        w.put("working_set_tokens", workload.workingSetTokens());
        w.put("seed", trace == null ? seed() : null);
        w.put("shape", trace == null ? (shape == null ? "default" : shape) : null);
        w.put("trace", trace == null ? null : trace.toString());
    }
}
