package org.vllmrouter.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.vllmrouter.core.policy.StickyBalancedPolicy;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.Pressure;
import org.vllmrouter.mock.rollout.Trace;
import org.vllmrouter.mock.rollout.Workload;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code simulate}: the engine's policies against the rollout cost model, in virtual time. Every policy at every
 * pressure replays the same workload (generated from the seed, or read from a trace). Bad input is one line on
 * stderr and exit status 2, before anything runs.
 */
@Command(name = "simulate", mixinStandardHelpOptions = true,
        description = "Replay a rollout batch through the router's policies against modelled vLLM workers.")
public final class SimulateMain implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Mixin
    private WorkloadOptions options = new WorkloadOptions();

    @Mixin
    private CostOptions cost = new CostOptions();

    @Option(names = "--workers", description = "Workers (default: 64).")
    private int workers = 64;

    @Option(names = "--write-trace", paramLabel = "FILE", description = "Write the workload as a JSONL trace.")
    private Path writeTrace;

    @Option(names = "--json", description = "Print one JSON object instead of a table.")
    private boolean json;

    @Option(names = "--progress", description = "Keep a progress line on stderr, one update per finished run.")
    private boolean progress;

    @Option(names = "--trajectories", paramLabel = "FILE",
            description = "Write every trajectory of every run as JSONL: its workers, tokens, waits and moves.")
    private Path trajectories;

    @Option(names = "--group-latencies",
            description = "With --json, also list every group's latency in each result (group_latencies_s).")
    private boolean groupLatencies;

    @Option(names = "--sticky-balanced-tool-hold-secs", paramLabel = "SECONDS",
            description = "sticky_balanced's tool-call hold, as the router's flag (default: 0, no hold).")
    private double toolHoldSecs;

    @Option(names = "--sticky-balanced-group-by-kv",
            description = "sticky_balanced takes a group's home from the workers' cached prefixes, as the router's flag.")
    private boolean groupByKv;

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

    @Override
    public Integer call() throws BadInput, IOException {
        List<String> policies = options.simulatedPolicies();
        if (workers <= 0) {
            throw new BadInput("--workers must be > 0, got " + workers);
        }
        if (!(Double.isFinite(toolHoldSecs) && toolHoldSecs >= 0 && toolHoldSecs <= 3600)) {
            throw new BadInput("--sticky-balanced-tool-hold-secs must be between 0 and 3600, got " + toolHoldSecs);
        }
        StickyBalancedPolicy.Settings d = StickyBalancedPolicy.Settings.DEFAULTS;
        StickyBalancedPolicy.Settings stickyBalanced = new StickyBalancedPolicy.Settings(d.groupMargin(),
                d.groupSeparator(), d.moveMargin(), d.moveKvUsage(), Duration.ofNanos(Math.round(toolHoldSecs * 1e9)),
                groupByKv);
        CostConstants costs = cost.costs();
        List<Pressure> levels = options.pressures();
        Workload workload = options.workload();
        Optional<Pressure> fixed = cost.fixedCapacity(workload, workers, costs, options.pressureGiven());
        if (fixed.isPresent()) {
            levels = List.of(fixed.get());
        }
        if (writeTrace != null) {
            try (Writer w = Files.newBufferedWriter(writeTrace, StandardCharsets.UTF_8)) {
                Trace.write(workload, w);
            }
        }
        PreparedWorkload prepared = PreparedWorkload.of(workload, costs);
        List<SimulationResult> results = new ArrayList<>();
        int total = levels.size() * policies.size();
        try (Writer dump = trajectories == null ? null
                : Files.newBufferedWriter(trajectories, StandardCharsets.UTF_8)) {
            for (Pressure level : levels) {
                for (String p : policies) {
                    RolloutSimulation simulation = new RolloutSimulation(prepared, p, workers, level, stickyBalanced);
                    results.add(simulation.run());
                    if (dump != null) {
                        write(simulation.trajectories(), dump);
                    }
                    if (progress) {
                        err.printf("\rsimulate: %d/%d runs done (last: %s at %s pressure)\u001b[K", results.size(),
                                total, p, level.name());
                        err.flush();
                    }
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

    private static void write(List<TrajectoryRecord> records, Writer dump) throws IOException {
        for (TrajectoryRecord r : records) {
            ObjectNode line = JSON.createObjectNode();
            r.put(line);
            dump.write(JSON.writeValueAsString(line));
            dump.write('\n');
        }
    }

    private ObjectNode json(Workload workload, List<SimulationResult> results) {
        ObjectNode root = JSON.createObjectNode();
        options.describe(workload, root.putObject("workload"));
        ArrayNode list = root.putArray("results");
        for (SimulationResult r : results) {
            ResultJson.put(r, list.addObject(), groupLatencies);
        }
        return root;
    }

    private String table(Workload workload, List<SimulationResult> results) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("%d trajectories in %d groups, %d turns, %s; %d workers%n",
                workload.trajectories().size(), workload.groups().size(), workload.turnCount(), options.origin(),
                workers));
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
