package org.vllmrouter.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
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
        SimulationResult result = new LiveRollout(workload, target).run(policy, levels.get(0).name(),
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
        ResultJson.put(result, root.putArray("results").addObject(), true);
        out.println(JSON.writeValueAsString(root));
        return 0;
    }

    private int blocksPerWorker(Workload workload, Pressure level) {
        return level.blocksPerWorker(workload, workers, CostConstants.LLAMA_8B_H100);
    }
}
