package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import java.util.List;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.proxy.Hop;
import org.vllmrouter.server.proxy.ProxiedRequest;
import org.vllmrouter.server.proxy.Proxy;

/** Upstream's proxied GETs ({@code /v1/models}, {@code /health_generate}, ...): the first registered worker answers, healthy or not. */
final class FirstWorkerRoute implements RouteHandler {
    private final WorkerRegistry workers;
    private final Proxy proxy;

    FirstWorkerRoute(WorkerRegistry workers, Proxy proxy) {
        this.workers = workers;
        this.proxy = proxy;
    }

    @Override
    public void handle(Reply reply, FullHttpRequest request, RequestPath path) {
        List<Worker> all = workers.all();
        proxy.start(reply, new ProxiedRequest(path.routeKey(), path.rawTarget(),
                Hop.forwardable(request.headers(), true))
                .sentTo(all.isEmpty() ? null : all.get(0), null)
                .whenNoWorker("No workers are available"));
    }
}
