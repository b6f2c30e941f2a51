package org.vllmrouter.server.proxy;

import io.netty.channel.EventLoop;
import io.netty.channel.group.ChannelGroup;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.metrics.RouterMetrics;

/**
 * The streaming proxy of one router. Each exchange runs on its client connection's event loop from start to
 * finish, over that loop's pooled keep-alive connections to the worker (see docs/architecture.md, 'How a request
 * flows').
 */
public final class Proxy implements AutoCloseable {
    final WorkerPools pools;
    final WorkerRegistry workers;
    final WorkerCalls calls;
    final RouterMetrics metrics;
    final long requestTimeoutNanos;
    private final ConcurrentHashMap<EventLoop, RequestDeadlines> deadlinesByLoop = new ConcurrentHashMap<>();

    /**
     * {@code requestTimeoutSecs} bounds a whole exchange, the relayed answer included, as upstream does; {@code tls}
     * secures the connections to {@code https} workers, which join {@code connections} until they close.
     */
    public Proxy(WorkerRegistry workers, WorkerCalls calls, RouterMetrics metrics, int requestTimeoutSecs,
                 WorkerTls tls, ChannelGroup connections) {
        this.pools = new WorkerPools(tls, connections);
        this.workers = workers;
        this.calls = calls;
        this.metrics = metrics;
        this.requestTimeoutNanos = TimeUnit.SECONDS.toNanos(Math.max(1, requestTimeoutSecs));
    }

    /**
     * Proxies the client's request {@code reply} holds as {@code request} says; takes both over. Call on the
     * client's loop.
     */
    public void start(Reply reply, ProxiedRequest request) {
        new ProxyExchange(this, reply, request).start();
    }

    /** The request timeouts of this proxy's exchanges on {@code loop}; use on that loop only. */
    RequestDeadlines deadlines(EventLoop loop) {
        return deadlinesByLoop.computeIfAbsent(loop, l -> new RequestDeadlines(l, requestTimeoutNanos));
    }

    /** Closes the idle worker connections. */
    @Override
    public void close() {
        pools.close();
    }
}
