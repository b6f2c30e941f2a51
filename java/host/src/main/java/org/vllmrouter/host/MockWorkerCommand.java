package org.vllmrouter.host;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.vllmrouter.mock.MockWorkerMain;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code vllm-router mock-worker ARGS...}: mock vLLM workers, for demos and tests. */
@Command(
        name = "mock-worker",
        description = {
            "Run mock vLLM workers (many ports in one process), e.g. `mock-worker --ports 8001-8004`",
            "or `mock-worker --count 4`. `mock-worker --help` lists the options."
        })
final class MockWorkerCommand implements Callable<Integer> {

    @Parameters(paramLabel = "ARGS", description = "Mock worker options (see `mock-worker --help`).")
    private List<String> mockArgs = new ArrayList<>();

    @Override
    public Integer call() throws InterruptedException {
        MockWorkerMain.main(mockArgs.toArray(String[]::new));
        // The workers are up; MockWorkerMain ends the process itself (SIGTERM, lifeline EOF, crash).
        Thread.currentThread().join();
        return 0;
    }
}
