package org.vllmrouter.server.proxy;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.group.ChannelGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.server.http.HttpCodecs;

/**
 * Keep-alive connections to workers, one pool per (event loop, worker) so a proxied request runs on the thread of
 * its client connection from start to finish. Each connection carries a {@link BackendHandler}. A pool is only
 * ever touched on its own event loop, so it is a plain deque: taking an idle connection costs no promise, no
 * listener and no health-check round, which a general-purpose channel pool spends on every request. Idle connections
 * are closed by one sweep per event loop rather than an idle-state handler per connection, which would take the
 * time on every read and hang a listener on every write of every request. A connection to an {@code https} worker
 * joins its pool once its TLS handshake has succeeded ({@link WorkerTls}). See docs/architecture.md, 'Worker
 * sources and transport'.
 */
final class WorkerPools implements AutoCloseable {
    /**
     * An unused worker connection is closed after this long: just under uvicorn's (vLLM's server) 5 s keep-alive,
     * so the router, not the worker, normally ends idle connections and a request rarely meets one closing.
     */
    private static final long IDLE_CLOSE_NANOS = TimeUnit.SECONDS.toNanos(4);
    /** How often a loop looks for connections idle too long: they close between 4 and 4.5 s of idleness. */
    private static final long SWEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final WorkerTls tls;
    private final ChannelGroup connections;
    private final ConcurrentHashMap<EventLoop, PoolsOfLoop> byLoop = new ConcurrentHashMap<>();

    WorkerPools(WorkerTls tls, ChannelGroup connections) {
        this.tls = tls;
        this.connections = connections;
    }

    /** An idle connection to the worker, or null when there is none; call on {@code loop}. */
    BackendHandler takeIdle(EventLoop loop, String baseUrl) {
        return poolsOf(loop).takeIdle(baseUrl);
    }

    /** A new connection to the worker, ready for its first exchange; call on {@code loop}. */
    Future<BackendHandler> connect(EventLoop loop, String baseUrl) {
        return poolsOf(loop).connect(baseUrl);
    }

    /** Returns a connection whose exchange ended cleanly (response fully read, keep-alive) to its pool; on its loop. */
    static void release(BackendHandler connection) {
        connection.used = true;
        ArrayDeque<BackendHandler> idle = connection.pool;
        if (idle != null && connection.channel().isActive()) {
            connection.idleSinceNanos = System.nanoTime();
            idle.addLast(connection);
        } else {
            connection.channel().close();
        }
    }

    private PoolsOfLoop poolsOf(EventLoop loop) {
        return byLoop.computeIfAbsent(loop, l -> new PoolsOfLoop(l, tls, connections));
    }

    @Override
    public void close() {
        byLoop.values().forEach(PoolsOfLoop::close);
        byLoop.clear();
    }

    private static final class PoolsOfLoop {
        private final EventLoop loop;
        private final WorkerTls tls;
        private final Bootstrap bootstrap;
        /** Idle connections per worker, oldest first. */
        private final HashMap<String, ArrayDeque<BackendHandler>> idleByWorker = new HashMap<>();
        private ScheduledFuture<?> sweep;

        PoolsOfLoop(EventLoop loop, WorkerTls tls, ChannelGroup connections) {
            this.loop = loop;
            this.tls = tls;
            this.bootstrap = new Bootstrap()
                    .group(loop)
                    .channel(Transport.clientChannel(loop))
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.SO_KEEPALIVE, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            connections.add(ch);
                            ch.pipeline().addLast(HttpCodecs.client(), new BackendHandler());
                        }
                    });
        }

        BackendHandler takeIdle(String baseUrl) {
            ArrayDeque<BackendHandler> idle = idleByWorker.get(baseUrl);
            if (idle == null) {
                return null;
            }
            BackendHandler taken;
            // Most recently used first: it is the least likely to have been closed by the worker meanwhile.
            while ((taken = idle.pollLast()) != null) {
                if (taken.channel().isActive()) {
                    return taken;
                }
            }
            return null;
        }

        Future<BackendHandler> connect(String baseUrl) {
            ArrayDeque<BackendHandler> idle = idleByWorker.computeIfAbsent(baseUrl, url -> new ArrayDeque<>());
            if (sweep == null) {
                sweep = loop.scheduleAtFixedRate(this::closeIdleTooLong, SWEEP_NANOS, SWEEP_NANOS, TimeUnit.NANOSECONDS);
            }
            Promise<BackendHandler> connected = loop.newPromise();
            bootstrap.connect(WorkerAddress.of(baseUrl).socketAddress()).addListener((ChannelFutureListener) f -> {
                if (!f.isSuccess()) {
                    connected.setFailure(f.cause());
                    return;
                }
                tls.secure(f.channel(), baseUrl).addListener((Future<Channel> secured) -> {
                    if (!secured.isSuccess()) {
                        f.channel().close();
                        connected.setFailure(secured.cause());
                        return;
                    }
                    BackendHandler fresh = secured.getNow().pipeline().get(BackendHandler.class);
                    fresh.pool = idle;
                    connected.setSuccess(fresh);
                });
            });
            return connected;
        }

        /** Closes the idle connections; a loop already shutting down closes every channel itself. */
        void close() {
            if (loop.inEventLoop()) {
                closeIdle();
            } else if (!loop.isShuttingDown()) {
                loop.execute(this::closeIdle);
            }
        }

        /**
         * Closes the connections idle for {@link #IDLE_CLOSE_NANOS} (just under uvicorn's keep-alive) and drops the
         * ones the worker closed meanwhile; each deque is oldest first, so the walk stops at the first young one.
         */
        private void closeIdleTooLong() {
            long now = System.nanoTime();
            for (ArrayDeque<BackendHandler> idle : idleByWorker.values()) {
                BackendHandler oldest;
                while ((oldest = idle.peekFirst()) != null
                        && (now - oldest.idleSinceNanos >= IDLE_CLOSE_NANOS || !oldest.channel().isActive())) {
                    idle.pollFirst().channel().close();
                }
            }
        }

        private void closeIdle() {
            if (sweep != null) {
                sweep.cancel(false);
                sweep = null;
            }
            for (ArrayDeque<BackendHandler> idle : idleByWorker.values()) {
                idle.forEach(connection -> connection.channel().close());
                idle.clear();
            }
        }
    }
}
