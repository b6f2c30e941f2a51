package org.vllmrouter.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.Pressure;
import org.vllmrouter.mock.rollout.Trace;
import org.vllmrouter.mock.rollout.TraceFormatException;
import org.vllmrouter.mock.rollout.Workload;
import org.vllmrouter.mock.rollout.WorkloadShape;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code simulate}: the engine's policies against the rollout cost model, in virtual time. Every policy at every
 * pressure replays the same workload (generated from the seed, or read from a trace). Bad input is one line on
 * stderr and exit status 2, before anything runs.
 */
@Command(name = "simulate", mixinStandardHelpOptions = true,
        description = "Replay a rollout batch through the router's policies against modelled vLLM workers.")
public final class SimulateMain implements Callable<Integer> {
    static final String DEFAULT_POLICIES = "sticky_least_loaded,sticky_balanced,kv_aware,cache_aware,round_robin,consistent_hash";
    private static final ObjectMapper JSON = new ObjectMapper();

    @Option(names = "--policies", split = ",", paramLabel = "NAME",
            description = "Policies to compare (default: " + DEFAULT_POLICIES + ").")
    private List<String> policies = List.of(DEFAULT_POLICIES.split(","));

    @Option(names = "--workers", description = "Workers (default: 64).")
    private int workers = 64;

    @Option(names = "--groups", description = "Prompts in the batch (default: 256); not with --trace.")
    private Integer groups;

    @Option(names = "--samples", description = "Samples per prompt, the group size (default: 16); not with --trace.")
    private Integer samples;

    @Option(names = "--pressure", split = ",", paramLabel = "LEVEL",
            description = "KV pressure: low, moderate, high or a ratio; a list runs each (default: moderate).")
    private List<String> pressures = List.of("moderate");

    @Option(names = "--seed", description = "Seed of the generated workload (default: 1); not with --trace.")
    private Long seed;

    @Option(names = "--abandon",
            description = "Share of trajectories the client abandons mid-turn (default: 0); not with --trace.")
    private Double abandon;

    @Option(names = "--trace", paramLabel = "FILE", description = "Replay this JSONL trace instead of generating.")
    private Path trace;

    @Option(names = "--write-trace", paramLabel = "FILE", description = "Write the workload as a JSONL trace.")
    private Path writeTrace;

    @Option(names = "--json", description = "Print one JSON object instead of a table.")
    private boolean json;

    @Option(names = "--progress", description = "Keep a progress line on stderr, one update per finished run.")
    private boolean progress;

    private PrintStream out = System.out;
    private PrintStream err = System.err;

    public static void main(String[] args) {
        System.exit(run(System.out, System.err, args));
    }

    /** Runs {@code simulate ARGS} and returns its exit status. */
    public static int run(PrintStream out, PrintStream err, String... args) {
        SimulateMain command = new SimulateMain();
        command.out = out;
        command.err = err;
        CommandLine cli = new CommandLine(command)
                .setOut(new PrintWriter(out, true))
                .setErr(new PrintWriter(err, true))
                .setParameterExceptionHandler((e, a) -> {
                    err.println("simulate: " + e.getMessage());
                    return 2;
                })
                .setExecutionExceptionHandler((e, c, p) -> {
                    if (e instanceof BadInput) {
                        err.println("simulate: " + e.getMessage());
                        return 2;
                    }
                    throw e;
                });
        return cli.execute(args);
    }

    /** Input the command refuses; its message is the whole error line. */
    private static final class BadInput extends Exception {
        BadInput(String message) {
            super(message);
        }
    }

    @Override
    public Integer call() throws BadInput, IOException {
        for (String p : policies) {
            if (!PolicyNames.isKnown(p)) {
                throw new BadInput("unknown policy '" + p + "'; expected one of " + String.join(", ", PolicyNames.ALL));
            }
        }
        if (workers <= 0) {
            throw new BadInput("--workers must be > 0, got " + workers);
        }
        List<Pressure> levels = new ArrayList<>();
        Workload workload;
        try {
            for (String p : pressures) {
                levels.add(Pressure.parse(p));
            }
            workload = workload();
        } catch (IllegalArgumentException e) {
            throw new BadInput(e.getMessage());
        }
        if (writeTrace != null) {
            try (Writer w = Files.newBufferedWriter(writeTrace, StandardCharsets.UTF_8)) {
                Trace.write(workload, w);
            }
        }
        PreparedWorkload prepared = PreparedWorkload.of(workload, CostConstants.LLAMA_8B_H100);
        List<SimulationResult> results = new ArrayList<>();
        int total = levels.size() * policies.size();
        for (Pressure level : levels) {
            for (String p : policies) {
                results.add(new RolloutSimulation(prepared, p, workers, level).run());
                if (progress) {
                    err.printf("\rsimulate: %d/%d runs done (last: %s at %s pressure)\u001b[K", results.size(), total,
                            p, level.name());
                    err.flush();
                }
            }
        }
        if (progress) {
            err.println();
        }
        if (json) {
            out.println(JSON.writeValueAsString(json(workload, results)));
        } else {
            out.print(table(workload, results));
        }
        return 0;
    }

    private Workload workload() throws BadInput, IOException {
        if (trace != null) {
            List<String> generating = new ArrayList<>();
            addIf(groups != null, "--groups", generating);
            addIf(samples != null, "--samples", generating);
            addIf(seed != null, "--seed", generating);
            addIf(abandon != null, "--abandon", generating);
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
        return Workload.generate(WorkloadShape.of(g, s).withAbandonShare(abandon == null ? 0 : abandon), seed());
    }

    private static void addIf(boolean given, String option, List<String> options) {
        if (given) {
            options.add(option);
        }
    }

    private long seed() {
        return seed == null ? 1 : seed;
    }

    private ObjectNode json(Workload workload, List<SimulationResult> results) {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode w = root.putObject("workload");
        w.put("trajectories", workload.trajectories().size());
        w.put("groups", workload.groups().size());
        w.put("turns", workload.turnCount());
        w.put("abandoned", workload.trajectories().stream().filter(t -> t.abandoned()).count());
        w.put("working_set_tokens", workload.workingSetTokens());
        w.put("seed", trace == null ? seed() : null);
        w.put("trace", trace == null ? null : trace.toString());
        ArrayNode list = root.putArray("results");
        for (SimulationResult r : results) {
            ObjectNode o = list.addObject();
            o.put("policy", r.policy());
            o.put("pressure", r.pressure());
            o.put("workers", r.workers());
            o.put("kv_blocks_per_worker", r.kvBlocksPerWorker());
            o.put("makespan_s", round(r.makespan()));
            ObjectNode group = o.putObject("group_latency_s");
            group.put("p50", round(r.groupP50()));
            group.put("p90", round(r.groupP90()));
            group.put("max", round(r.groupMax()));
            ObjectNode trajectory = o.putObject("trajectory_latency_s");
            trajectory.put("p50", round(r.trajectoryP50()));
            trajectory.put("p90", round(r.trajectoryP90()));
            o.put("prefix_hit_rate", Math.round(r.prefixHitRate() * 10000) / 10000.0);
            o.put("recomputed_tokens", r.recomputedTokens());
            o.put("imbalance", Math.round(r.imbalance() * 1000) / 1000.0);
            o.put("preemptions", r.preemptions());
            o.put("turns", r.turns());
            o.put("errors", r.errors());
        }
        return root;
    }

    private static double round(double seconds) {
        return Math.round(seconds * 1000) / 1000.0;
    }

    private String table(Workload workload, List<SimulationResult> results) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("%d trajectories in %d groups, %d turns, %s; %d workers%n",
                workload.trajectories().size(), workload.groups().size(), workload.turnCount(),
                trace == null ? "seed " + seed() : "trace " + trace, workers));
        sb.append(String.format("%-9s %-20s %9s %9s %9s %9s %9s %9s %6s %12s %6s %8s %6s%n", "pressure", "policy",
                "makespan", "group50", "group90", "groupmax", "traj50", "traj90", "hit%", "recomputed",
                "imbal", "preempt", "errors"));
        for (SimulationResult r : results) {
            sb.append(String.format("%-9s %-20s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %6.1f %12d %6.2f %8d %6d%n",
                    r.pressure(), r.policy(), r.makespan(), r.groupP50(), r.groupP90(), r.groupMax(),
                    r.trajectoryP50(), r.trajectoryP90(), 100 * r.prefixHitRate(), r.recomputedTokens(),
                    r.imbalance(), r.preemptions(), r.errors()));
        }
        sb.append("latencies in virtual seconds\n");
        return sb.toString();
    }
}
