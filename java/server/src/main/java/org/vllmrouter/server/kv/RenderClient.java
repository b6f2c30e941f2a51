package org.vllmrouter.server.kv;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.pool.AbstractChannelPoolHandler;
import io.netty.channel.pool.AbstractChannelPoolMap;
import io.netty.channel.pool.ChannelHealthChecker;
import io.netty.channel.pool.ChannelPool;
import io.netty.channel.pool.SimpleChannelPool;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.vllmrouter.server.proxy.Transport;
import org.vllmrouter.server.proxy.WorkerAddress;
import org.vllmrouter.server.proxy.WorkerTls;
import org.vllmrouter.server.worker.ControlClient;

/**
 * The render call on keep-alive connections: one Netty {@link SimpleChannelPool} per (event loop, worker), so a
 * request's render call runs on its client connection's loop and the next one on that loop reuses the connection
 * (a render call is on every kv_aware request's path; a fresh TCP, and for {@code https} TLS, handshake each time
 * would cost more than the render itself). A connection that answered in full with keep-alive goes back to its pool;
 * one that timed out, failed or was told to close is closed and the pool's health check drops it.
 */
final class RenderClient implements AutoCloseable {
    /** Closed when unused this long: under uvicorn's (vLLM's server) 5 s keep-alive, so the router ends it first. */
    private static final int IDLE_CLOSE_SECS = 4;
    private static final int MAX_REPLY_BYTES = 64 * 1024 * 1024;
    private static final AttributeKey<Boolean> SECURED = AttributeKey.valueOf("vllm-router.render-secured");

    private record PoolKey(EventLoop loop, String baseUrl) {
    }

    private final WorkerTls tls;
    private final AbstractChannelPoolMap<PoolKey, SimpleChannelPool> pools;

    RenderClient(WorkerTls tls, ChannelGroup connections) {
        this.tls = tls;
        this.pools = new AbstractChannelPoolMap<>() {
            @Override
            protected SimpleChannelPool newPool(PoolKey key) {
                Bootstrap bootstrap = new Bootstrap()
                        .group(key.loop())
                        .channel(Transport.clientChannel(key.loop()))
                        .option(ChannelOption.TCP_NODELAY, true)
                        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                        .remoteAddress(WorkerAddress.of(key.baseUrl()).socketAddress());
                return new SimpleChannelPool(bootstrap, new PipelineOfRenderConnection(connections),
                        ChannelHealthChecker.ACTIVE, true, true);
            }
        };
    }

    /** POSTs {@code body} to {@code target} of the worker; completes on {@code loop}. */
    CompletableFuture<ControlClient.Reply> post(EventLoop loop, String baseUrl, String target, HttpHeaders headers,
                                                byte[] body, Duration timeout) {
        CompletableFuture<ControlClient.Reply> result = new CompletableFuture<>();
        WorkerAddress address;
        ChannelPool pool;
        try {
            address = WorkerAddress.of(baseUrl);
            pool = pools.get(new PoolKey(loop, baseUrl));
        } catch (IllegalArgumentException e) {
            result.completeExceptionally(e);
            return result;
        }
        var timer = loop.schedule(() -> result.completeExceptionally(
                new TimeoutException("no reply within " + timeout.toMillis() + " ms")), timeout.toNanos(), TimeUnit.NANOSECONDS);
        result.whenComplete((r, e) -> timer.cancel(false));
        pool.acquire().addListener((Future<Channel> acquired) -> {
            if (!acquired.isSuccess()) {
                result.completeExceptionally(acquired.cause());
                return;
            }
            Channel channel = acquired.getNow();
            if (Boolean.TRUE.equals(channel.attr(SECURED).get())) {
                exchange(pool, channel, address, target, headers, body, result);
                return;
            }
            tls.secure(channel, baseUrl).addListener((Future<Channel> secured) -> {
                if (secured.isSuccess()) {
                    channel.attr(SECURED).set(Boolean.TRUE);
                    exchange(pool, channel, address, target, headers, body, result);
                } else {
                    channel.close();
                    pool.release(channel);
                    result.completeExceptionally(secured.cause());
                }
            });
        });
        return result;
    }

    /** Stops pooling connections to a worker that left, closing its idle ones. */
    void forget(String baseUrl) {
        List<PoolKey> keys = new ArrayList<>();
        for (Map.Entry<PoolKey, SimpleChannelPool> entry : pools) {
            if (entry.getKey().baseUrl().equals(baseUrl)) {
                keys.add(entry.getKey());
            }
        }
        keys.forEach(pools::remove);
    }

    private static void exchange(ChannelPool pool, Channel channel, WorkerAddress address, String target,
                                 HttpHeaders headers, byte[] body, CompletableFuture<ControlClient.Reply> result) {
        if (result.isDone()) {
            pool.release(channel);
            return;
        }
        AtomicBoolean released = new AtomicBoolean();
        channel.pipeline().get(ReplyHandler.class).await(result, keepAlive -> {
            if (released.compareAndSet(false, true)) {
                if (!keepAlive) {
                    channel.close();
                }
                pool.release(channel);
            }
        });
        // A call that ends without a complete reply (timeout, caller gone) leaves the connection mid-exchange.
        result.whenComplete((r, e) -> {
            if (e != null && released.compareAndSet(false, true)) {
                channel.close();
                pool.release(channel);
            }
        });
        FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, target,
                Unpooled.wrappedBuffer(body));
        request.headers().set(headers);
        request.headers().set(HttpHeaderNames.HOST, address.hostHeader());
        request.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        request.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        channel.writeAndFlush(request).addListener((ChannelFutureListener) w -> {
            if (!w.isSuccess()) {
                result.completeExceptionally(w.cause());
            }
        });
    }

    @Override
    public void close() {
        pools.close();
    }

    private static final class PipelineOfRenderConnection extends AbstractChannelPoolHandler {
        private final ChannelGroup connections;

        PipelineOfRenderConnection(ChannelGroup connections) {
            this.connections = connections;
        }

        @Override
        public void channelCreated(Channel ch) {
            connections.add(ch);
            ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(MAX_REPLY_BYTES),
                    new IdleStateHandler(0, 0, IDLE_CLOSE_SECS, TimeUnit.SECONDS), new ReplyHandler());
        }
    }

    /** Completes the call that currently uses the connection; between calls a reply or idleness closes it. */
    private static final class ReplyHandler extends SimpleChannelInboundHandler<FullHttpResponse> {
        interface Done {
            void release(boolean keepAlive);
        }

        private CompletableFuture<ControlClient.Reply> current;
        private Done done;

        void await(CompletableFuture<ControlClient.Reply> result, Done whenDone) {
            this.current = result;
            this.done = whenDone;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse response) {
            CompletableFuture<ControlClient.Reply> result = current;
            Done whenDone = done;
            current = null;
            done = null;
            if (result == null) {
                ctx.close();
                return;
            }
            result.complete(new ControlClient.Reply(response.status().code(), response.headers().copy(),
                    ByteBufUtil.getBytes(response.content())));
            whenDone.release(HttpUtil.isKeepAlive(response));
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            fail(new ClosedChannelException());
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            fail(cause instanceof IOException ? cause : new IOException(cause));
            ctx.close();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof IdleStateEvent) {
                if (current == null) {
                    ctx.close();
                }
            } else {
                ctx.fireUserEventTriggered(evt);
            }
        }

        private void fail(Throwable cause) {
            CompletableFuture<ControlClient.Reply> result = current;
            current = null;
            done = null;
            if (result != null) {
                result.completeExceptionally(cause);
            }
        }
    }
}
