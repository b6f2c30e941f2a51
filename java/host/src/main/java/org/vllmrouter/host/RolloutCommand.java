package org.vllmrouter.host;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.vllmrouter.sim.RolloutMain;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code vllm-router rollout ARGS...}: the live arm's driver, a rollout batch over HTTP through a running router. */
@Command(
        name = "rollout",
        description = {
            "Drive a rollout batch through a running router to engine-model mock workers (one policy, one pressure);",
            "`python -m vllm_router.bench rollout` starts the workers and routers and calls it.",
            "`rollout --help` lists the options."
        })
final class RolloutCommand implements Callable<Integer> {

    @Parameters(paramLabel = "ARGS", description = "Driver options (see `rollout --help`).")
    private List<String> rolloutArgs = new ArrayList<>();

    @Override
    public Integer call() {
        return RolloutMain.run(System.out, System.err, rolloutArgs.toArray(String[]::new));
    }
}
