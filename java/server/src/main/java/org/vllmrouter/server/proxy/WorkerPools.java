package org.vllmrouter.server.proxy;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Keep-alive connections to workers, one pool per (event loop, worker) so a proxied request runs on the thread of
 * its client connection from start to finish. Each connection carries a {@link BackendHandler}. A pool is only
 * ever touched on its own event loop, so it is a plain deque: taking an idle connection costs no promise, no
 * listener and no health-check round, which a general-purpose channel pool spends on every request. A connection to
 * an {@code https} worker joins its pool once its TLS handshake has succeeded ({@link WorkerTls}). See
 * docs/architecture.md, 'Worker sources and transport'.
 */
final class WorkerPools implements AutoCloseable {
    /**
     * An unused worker connection is closed after this long: just under uvicorn's (vLLM's server) 5 s keep-alive,
     * so the router, not the worker, normally ends idle connections and a request rarely meets one closing.
     */
    private static final int IDLE_CLOSE_SECS = 4;
    private static final AttributeKey<ArrayDeque<Channel>> IDLE_OF = AttributeKey.valueOf("vllm-router.worker-pool");
    private static final AttributeKey<Boolean> USED = AttributeKey.valueOf("vllm-router.worker-connection-used");

    private final WorkerTls tls;
    private final ConcurrentHashMap<EventLoop, PoolsOfLoop> byLoop = new ConcurrentHashMap<>();

    WorkerPools(WorkerTls tls) {
        this.tls = tls;
    }

    /** An idle connection to the worker, or a new one; call on {@code loop}. */
    Future<Channel> acquire(EventLoop loop, String baseUrl) {
        return byLoop.computeIfAbsent(loop, l -> new PoolsOfLoop(l, tls)).acquire(baseUrl);
    }

    /** Returns a channel whose exchange ended cleanly (response fully read, keep-alive) to its pool; on its loop. */
    static void release(Channel channel) {
        channel.attr(USED).set(Boolean.TRUE);
        ArrayDeque<Channel> idle = channel.attr(IDLE_OF).get();
        if (idle != null && channel.isActive()) {
            idle.addLast(channel);
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
        byLoop.values().forEach(PoolsOfLoop::close);
        byLoop.clear();
    }

    private static final class PoolsOfLoop {
        private final EventLoop loop;
        private final WorkerTls tls;
        private final Bootstrap bootstrap;
        private final HashMap<String, ArrayDeque<Channel>> idleByWorker = new HashMap<>();

        PoolsOfLoop(EventLoop loop, WorkerTls tls) {
            this.loop = loop;
            this.tls = tls;
            this.bootstrap = new Bootstrap()
                    .group(loop)
                    .channel(Transport.clientChannel())
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.SO_KEEPALIVE, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ch.pipeline().addLast(
                                    new HttpClientCodec(),
                                    new IdleStateHandler(0, 0, IDLE_CLOSE_SECS, TimeUnit.SECONDS),
                                    new BackendHandler());
                        }
                    });
        }

        Future<Channel> acquire(String baseUrl) {
            ArrayDeque<Channel> idle = idleByWorker.computeIfAbsent(baseUrl, url -> new ArrayDeque<>());
            Channel channel;
            // Most recently used first: it is the least likely to have been closed by the worker meanwhile.
            while ((channel = idle.pollLast()) != null) {
                if (channel.isActive()) {
                    return loop.newSucceededFuture(channel);
                }
            }
            Promise<Channel> connected = loop.newPromise();
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
                    Channel fresh = secured.getNow();
                    fresh.attr(IDLE_OF).set(idle);
                    // A connection closed while idle (by the idle timer or the worker) leaves the deque at once.
                    fresh.closeFuture().addListener((ChannelFutureListener) closed -> idle.remove(fresh));
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

        private void closeIdle() {
            for (ArrayDeque<Channel> idle : idleByWorker.values()) {
                for (Channel channel : idle.toArray(Channel[]::new)) {
                    channel.close();
                }
                idle.clear();
            }
        }
    }
}
