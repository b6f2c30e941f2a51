package org.vllmrouter.server;

/** Runs {@link EngineRunner} in a child JVM for process-level tests (signals, exit codes, stdout protocol). */
public final class EngineMain {
    private EngineMain() {}

    public static void main(String[] args) {
        System.exit(EngineRunner.serve(System.in, false));
    }
}
