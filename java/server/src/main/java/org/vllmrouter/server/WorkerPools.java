package org.vllmrouter.server;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.pool.AbstractChannelPoolHandler;
import io.netty.channel.pool.AbstractChannelPoolMap;
import io.netty.channel.pool.ChannelHealthChecker;
import io.netty.channel.pool.ChannelPool;
import io.netty.channel.pool.SimpleChannelPool;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.Future;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Keep-alive connections to workers, one pool per (event loop, worker) so a proxied request runs on the thread of
 * its client connection from start to finish. Each pooled channel carries a {@link BackendHandler}.
 */
final class WorkerPools implements AutoCloseable {
    /**
     * An unused worker connection is closed after this long: just under uvicorn's (vLLM's server) 5 s keep-alive,
     * so the router, not the worker, normally ends idle connections and a request rarely meets one closing.
     */
    private static final int IDLE_CLOSE_SECS = 4;
    private static final AttributeKey<ChannelPool> POOL = AttributeKey.valueOf("vllm-router.worker-pool");
    private static final AttributeKey<Boolean> USED = AttributeKey.valueOf("vllm-router.worker-connection-used");

    private final ConcurrentHashMap<EventLoop, PoolsOfLoop> byLoop = new ConcurrentHashMap<>();

    Future<Channel> acquire(EventLoop loop, String baseUrl) {
        return byLoop.computeIfAbsent(loop, PoolsOfLoop::new).get(baseUrl).acquire();
    }

    /** Returns a channel whose exchange ended cleanly (response fully read, keep-alive) to its pool. */
    static void release(Channel channel) {
        channel.attr(USED).set(Boolean.TRUE);
        ChannelPool pool = channel.attr(POOL).get();
        if (pool != null) {
            pool.release(channel);
        } else {
            channel.close();
        }
    }

    /** Whether the connection already carried an exchange before the current one. */
    static boolean wasUsed(Channel channel) {
        return Boolean.TRUE.equals(channel.attr(USED).get());
    }

    @Override
    public void close() {
        byLoop.values().forEach(AbstractChannelPoolMap::close);
        byLoop.clear();
    }

    private static final class PoolsOfLoop extends AbstractChannelPoolMap<String, SimpleChannelPool> {
        private final Bootstrap bootstrap;

        PoolsOfLoop(EventLoop loop) {
            this.bootstrap = new Bootstrap()
                    .group(loop)
                    .channel(Transport.clientChannel())
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.SO_KEEPALIVE, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000);
        }

        @Override
        protected SimpleChannelPool newPool(String baseUrl) {
            Bootstrap forWorker = bootstrap.clone().remoteAddress(WorkerAddress.of(baseUrl).socketAddress());
            SimpleChannelPool[] self = new SimpleChannelPool[1];
            self[0] = new SimpleChannelPool(forWorker, new AbstractChannelPoolHandler() {
                @Override
                public void channelCreated(Channel ch) {
                    ch.attr(POOL).set(self[0]);
                    ch.pipeline().addLast(
                            new HttpClientCodec(),
                            new IdleStateHandler(0, 0, IDLE_CLOSE_SECS, TimeUnit.SECONDS),
                            new BackendHandler());
                }
            }, ChannelHealthChecker.ACTIVE, true, true);
            return self[0];
        }
    }
}
