package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.List;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.server.http.Json;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;

/** {@code /health}, {@code /liveness} and {@code /readiness}, answered from the registry's view of the workers. */
final class HealthRoutes {
    private final WorkerRegistry workers;
    private final boolean discoversWorkers;

    HealthRoutes(WorkerRegistry workers, boolean discoversWorkers) {
        this.workers = workers;
        this.discoversWorkers = discoversWorkers;
    }

    /**
     * 200 when no registered worker is unhealthy (also with none at all, unless workers are discovered), else 503
     * naming the unhealthy ones.
     */
    void health(Reply reply, FullHttpRequest request, RequestPath path) {
        if (discoversWorkers && workers.size() == 0) {
            // Inference would answer 503 too: a router that has found no worker yet is not healthy.
            reply.text(HttpResponseStatus.SERVICE_UNAVAILABLE,
                    "No workers discovered yet");
            return;
        }
        List<String> unhealthy = workers.all().stream().filter(w -> !w.isHealthy()).map(Worker::url).toList();
        if (unhealthy.isEmpty()) {
            reply.text(HttpResponseStatus.OK, "All servers healthy");
            return;
        }
        StringBuilder list = new StringBuilder("[");
        for (int i = 0; i < unhealthy.size(); i++) {
            list.append(i == 0 ? "\"" : ", \"").append(unhealthy.get(i)).append('"');
        }
        reply.text(HttpResponseStatus.SERVICE_UNAVAILABLE,
                "Unhealthy servers: " + list.append(']'));
    }

    /** The router itself is up; workers are not asked. */
    void liveness(Reply reply, FullHttpRequest request, RequestPath path) {
        reply.text(HttpResponseStatus.OK, "OK");
    }

    /** Ready while at least one worker is healthy. */
    void readiness(Reply reply, FullHttpRequest request, RequestPath path) {
        List<Worker> all = workers.all();
        long healthy = all.stream().filter(Worker::isHealthy).count();
        if (healthy > 0) {
            reply.json(HttpResponseStatus.OK, Json.object(g -> {
                g.writeStringField("status", "ready");
                g.writeNumberField("healthy_workers", healthy);
                g.writeNumberField("total_workers", all.size());
            }));
            return;
        }
        reply.json(HttpResponseStatus.SERVICE_UNAVAILABLE, Json.object(g -> {
            g.writeStringField("status", "not_ready");
            g.writeStringField("reason", "no healthy workers available");
            g.writeNumberField("total_workers", all.size());
        }));
    }
}
