package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.List;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.server.http.FrontendHandler;
import org.vllmrouter.server.http.Json;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.http.Responses;

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
    void health(FrontendHandler front, FullHttpRequest request, RequestPath path) {
        request.release();
        if (discoversWorkers && workers.size() == 0) {
            // Inference would answer 503 too: a router that has found no worker yet is not healthy.
            front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
                    "No workers discovered yet"));
            return;
        }
        List<String> unhealthy = workers.all().stream().filter(w -> !w.isHealthy()).map(Worker::url).toList();
        if (unhealthy.isEmpty()) {
            front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.OK, "All servers healthy"));
            return;
        }
        StringBuilder list = new StringBuilder("[");
        for (int i = 0; i < unhealthy.size(); i++) {
            list.append(i == 0 ? "\"" : ", \"").append(unhealthy.get(i)).append('"');
        }
        front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
                "Unhealthy servers: " + list.append(']')));
    }

    /** The router itself is up; workers are not asked. */
    void liveness(FrontendHandler front, FullHttpRequest request, RequestPath path) {
        request.release();
        front.respond(Responses.text(front.context().alloc(), HttpResponseStatus.OK, "OK"));
    }

    /** Ready while at least one worker is healthy. */
    void readiness(FrontendHandler front, FullHttpRequest request, RequestPath path) {
        request.release();
        List<Worker> all = workers.all();
        long healthy = all.stream().filter(Worker::isHealthy).count();
        if (healthy > 0) {
            front.respond(Responses.json(front.context().alloc(), HttpResponseStatus.OK, Json.object(g -> {
                g.writeStringField("status", "ready");
                g.writeNumberField("healthy_workers", healthy);
                g.writeNumberField("total_workers", all.size());
            })));
            return;
        }
        front.respond(Responses.json(front.context().alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE, Json.object(g -> {
            g.writeStringField("status", "not_ready");
            g.writeStringField("reason", "no healthy workers available");
            g.writeNumberField("total_workers", all.size());
        })));
    }
}
