package org.vllmrouter.server.worker;

import java.util.ArrayList;
import java.util.List;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerSettings;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.server.metrics.RouterMetrics;

/**
 * Builds the worker objects for one URL: thresholds from the config, circuit transitions reported to metrics, and
 * DP expansion ({@code intra_node_data_parallel_size > 1} gives {@code url@0 .. url@N-1}).
 */
public final class WorkerFactory {
    private final WorkerSettings settings;
    private final RouterMetrics metrics;

    public WorkerFactory(WorkerSettings settings, RouterMetrics metrics) {
        this.settings = settings;
        this.metrics = metrics;
    }

    public List<Worker> create(String url, WorkerRole role, Integer bootstrapPort) {
        int ranks = settings.dataParallelSize();
        List<Worker> out = new ArrayList<>(ranks);
        for (int rank = 0; rank < ranks; rank++) {
            Worker.Builder builder = Worker.builder(url).settings(settings).role(role).bootstrapPort(bootstrapPort);
            if (ranks > 1) {
                builder.dpRank(rank);
            }
            Worker worker = builder.build();
            worker.circuitBreaker().setListener((from, to) -> metrics.circuitTransition(worker.shownUrl(), from, to));
            out.add(worker);
        }
        return out;
    }
}
