package org.vllmrouter.host;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.vllmrouter.sim.SimulateMain;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code vllm-router simulate ARGS...}: the router's policies against modelled vLLM workers, in virtual time. */
@Command(
        name = "simulate",
        description = {
            "Replay a rollout batch through the router's policies against modelled vLLM workers.",
            "e.g. `simulate --workers 64 --groups 256 --samples 16 --pressure low,moderate,high --json`.",
            "`simulate --help` lists the options."
        })
final class SimulateCommand implements Callable<Integer> {

    @Parameters(paramLabel = "ARGS", description = "Simulator options (see `simulate --help`).")
    private List<String> simulateArgs = new ArrayList<>();

    @Override
    public Integer call() {
        return SimulateMain.run(System.out, System.err, simulateArgs.toArray(String[]::new));
    }
}
