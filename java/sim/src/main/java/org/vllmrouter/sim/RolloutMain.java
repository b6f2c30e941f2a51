package org.vllmrouter.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.Pressure;
import org.vllmrouter.mock.rollout.Workload;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code rollout}: the live arm's driver, one policy at one pressure through a running router to mock workers that
 * run the engine model ({@code mock-worker --engine-model}); {@code python -m vllm_router.bench rollout} starts the
 * workers and a router per policy and calls it. {@code --plan} checks the input and prints the workload and the KV
 * blocks per worker of each pressure, sending nothing. Output is one JSON object, {@code simulate --json}'s shape, its
 * result with every group's latency. Bad input is one line on stderr and status 2, before any traffic.
 */
@Command(name = "rollout", mixinStandardHelpOptions = true,
        description = "Drive a rollout batch over HTTP through a router to engine-model mock workers.")
public final class RolloutMain implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Mixin
    private WorkloadOptions options = new WorkloadOptions();

    @Option(names = "--workers", description = "Workers the KV capacity is shared by (default: 8).")
    private int workers = 8;

    @Option(names = "--plan", description = "Check the input, print the workload and KV blocks per worker, and stop.")
    private boolean plan;

    @Option(names = "--router", paramLabel = "URL", description = "The router to drive.")
    private URI router;

    @Option(names = "--worker-urls", split = ",", paramLabel = "URL",
            description = "The mock workers behind the router, for their engine stats.")
    private List<URI> workerUrls = List.of();

    @Option(names = "--time-scale", description = "The workers' wall seconds per modelled second (default: 1).")
    private double timeScale = 1;

    @Option(names = "--model", description = "The model name in each request (default: mock).")
    private String model = "mock";

    @Option(names = "--real-vllm",
            description = "The workers are real vLLM serving the real-vLLM tests' tiny model, not engine-model mocks.")
    private boolean realVllm;

    @Option(names = "--label", paramLabel = "NAME",
            description = "The row's name (default: its one policy); the router, not the driver, routes.")
    private String label;

    @Option(names = "--progress", description = "Keep a progress line on stderr, one update per trajectory.")
    private boolean progress;

    @Option(names = "--trajectories", paramLabel = "FILE",
            description = "Append one JSON line per trajectory to FILE: the workers that answered it, its start and "
                    + "latency in model seconds.")
    private Path trajectories;

    private PrintStream out = System.out;
    private PrintStream err = System.err;

    /** Runs {@code rollout ARGS} and returns its exit status. */
    public static int run(PrintStream out, PrintStream err, String... args) {
        RolloutMain command = new RolloutMain();
        command.out = out;
        command.err = err;
        return new CommandLine(command)
                .setOut(new PrintWriter(out, true))
                .setErr(new PrintWriter(err, true))
                .setParameterExceptionHandler((e, a) -> {
                    err.println("rollout: " + e.getMessage());
                    return 2;
                })
                .setExecutionExceptionHandler((e, c, p) -> {
                    if (e instanceof BadInput || e instanceof IOException) {
                        err.println("rollout: " + e.getMessage());
                        return e instanceof BadInput ? 2 : 1;
                    }
                    throw e;
                })
                .execute(args);
    }

    @Override
    public Integer call() throws BadInput, IOException, InterruptedException {
        List<String> policies = options.policies();
        if (workers <= 0) {
            throw new BadInput("--workers must be > 0, got " + workers);
        }
        List<Pressure> levels = options.pressures();
        Workload workload = options.workload();
        ObjectNode root = JSON.createObjectNode();
        options.describe(workload, root.putObject("workload"));
        if (plan) {
            policies.forEach(root.putArray("policies")::add);
            ObjectNode blocks = root.putObject("kv_blocks_per_worker");
            for (Pressure level : levels) {
                blocks.put(level.name(), blocksPerWorker(workload, level));
            }
            out.println(JSON.writeValueAsString(root));
            return 0;
        }
        if ((label == null && policies.size() != 1) || levels.size() != 1) {
            throw new BadInput("a live run drives one policy (or --label) at one pressure; got " + policies.size()
                    + " policies and " + levels.size() + " pressures");
        }
        if (router == null || workerUrls.size() != workers) {
            throw new BadInput("a live run needs --router and one --worker-urls entry per worker (" + workers + ")");
        }
        LiveRollout.Target target;
        try {
            target = new LiveRollout.Target(router, workerUrls, timeScale, model, realVllm);
        } catch (IllegalArgumentException e) {
            throw new BadInput(e.getMessage());
        }
        int total = workload.trajectories().size();
        String policy = label != null ? label : policies.get(0);
        LiveRollout live = new LiveRollout(workload, target);
        Writer placements = openPlacements();
        try (placements) {
            SimulationResult result = live.run(policy, levels.get(0).name(),
                    blocksPerWorker(workload, levels.get(0)), n -> {
                        if (progress) {
                            synchronized (err) {
                                err.printf("\rrollout: %s: %d/%d trajectories done\u001b[K", policy, n, total);
                                err.flush();
                            }
                        }
                    });
            if (progress) {
                err.println();
            }
            ObjectNode row = root.putArray("results").addObject();
            ResultJson.put(result, row, true);
            putWorkerEngines(live.workerEngines(), row, policy);
            if (placements != null) {
                writePlacements(live.placements(), policy, levels.get(0).name(), placements);
            }
        }
        out.println(JSON.writeValueAsString(root));
        return 0;
    }

    /**
     * The {@code --trajectories} file, opened for appending before the run so that a path that cannot be written
     * stops it before any traffic; null without the option.
     */
    private Writer openPlacements() throws BadInput {
        if (trajectories == null) {
            return null;
        }
        try {
            return Files.newBufferedWriter(trajectories, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        } catch (IOException e) {
            String why = e instanceof NoSuchFileException ? "its directory does not exist"
                    : e instanceof AccessDeniedException ? "permission denied" : e.toString();
            throw new BadInput("--trajectories " + trajectories + " cannot be written: " + why);
        }
    }

    private static void writePlacements(List<LiveRollout.TrajectoryPlacement> placements, String policy,
                                        String pressure, Writer w) throws IOException {
        for (LiveRollout.TrajectoryPlacement p : placements) {
            ObjectNode o = JSON.createObjectNode();
            o.put("policy", policy);
            o.put("pressure", pressure);
            o.put("session_id", p.sessionId());
            o.put("group", p.group());
            p.workers().forEach(o.putArray("workers")::add);
            o.put("turns", p.turns());
            o.put("start_s", Math.round(p.start() * 1000) / 1000.0);
            o.put("latency_s", Math.round(p.latency() * 1000) / 1000.0);
            w.write(JSON.writeValueAsString(o));
            w.write('\n');
        }
    }

    /**
     * Each mock worker's engine figures under {@code worker_engines}, and one line on stderr when an engine model fell
     * behind the wall clock: then the run measured the machine as much as the policy.
     */
    private void putWorkerEngines(List<LiveRollout.WorkerEngine> engines, ObjectNode row, String policy) {
        if (engines.isEmpty()) {
            return;
        }
        ArrayNode all = row.putArray("worker_engines");
        long fellBehind = 0;
        double behindSeconds = 0;
        for (LiveRollout.WorkerEngine e : engines) {
            ObjectNode o = all.addObject();
            o.put("worker", e.worker().toString());
            o.put("peak_used_blocks", e.peakUsedBlocks());
            o.put("preemptions", e.preemptions());
            o.put("fell_behind", e.fellBehind());
            o.put("behind_s", Math.round(e.behindSeconds() * 1000) / 1000.0);
            fellBehind += e.fellBehind();
            behindSeconds += e.behindSeconds();
        }
        if (fellBehind > 0) {
            err.printf(Locale.ROOT, "rollout: %s: the workers' engine models fell behind the wall clock %d times and "
                    + "dropped %.1f model seconds in all; this machine did not keep up at --time-scale %s%n",
                    policy, fellBehind, behindSeconds, timeScale);
        }
    }

    private int blocksPerWorker(Workload workload, Pressure level) {
        return level.blocksPerWorker(workload, workers, CostConstants.LLAMA_8B_H100);
    }
}
