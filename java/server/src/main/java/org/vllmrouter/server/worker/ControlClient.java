package org.vllmrouter.server.worker;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.vllmrouter.server.proxy.Transport;
import org.vllmrouter.server.proxy.WorkerAddress;
import org.vllmrouter.server.proxy.WorkerTls;

/**
 * One-shot HTTP exchanges on a fresh connection ({@code Connection: close}) for the control plane: health probes,
 * start-up waits, fan-outs (/get_loads, /flush_cache, responses), API-key validation, and the PD stages that are
 * read whole (prefill, and decode when logprobs are merged). Relayed requests do not use this; they go through the
 * proxy's pooled connections. Connections to {@code https} workers go through the same {@link WorkerTls} as the
 * proxy's. Cancelling the returned future closes the connection, which is how a worker learns the caller went away.
 */
public final class ControlClient {
    /** A complete reply; the body is copied out so no reference-counted buffer escapes. */
    public record Reply(int status, HttpHeaders headers, byte[] body) {
        public boolean ok() {
            return status >= 200 && status < 300;
        }
    }

    private static final int MAX_REPLY_BYTES = 64 * 1024 * 1024;

    private final WorkerTls tls;
    private final ChannelGroup connections;

    /** Each connection joins {@code connections} until it closes, so its router can close it on the way out. */
    public ControlClient(WorkerTls tls, ChannelGroup connections) {
        this.tls = tls;
        this.connections = connections;
    }

    public CompletableFuture<Reply> send(EventLoop loop, HttpMethod method, String baseUrl, String target,
                                         HttpHeaders extraHeaders, byte[] body, Duration timeout) {
        CompletableFuture<Reply> result = new CompletableFuture<>();
        WorkerAddress address;
        try {
            address = WorkerAddress.of(baseUrl);
        } catch (IllegalArgumentException e) {
            result.completeExceptionally(e);
            return result;
        }
        Bootstrap bootstrap = new Bootstrap()
                .group(loop)
                .channel(Transport.clientChannel(loop))
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(10_000, Math.max(1, timeout.toMillis())))
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        connections.add(ch);
                        ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(MAX_REPLY_BYTES),
                                new ReplyHandler(result));
                    }
                });
        ChannelFuture connect = bootstrap.connect(address.socketAddress());
        Channel channel = connect.channel();
        var timer = loop.schedule(() -> {
            result.completeExceptionally(new TimeoutException("no reply within " + timeout.toMillis() + " ms"));
            channel.close();
        }, timeout.toNanos(), TimeUnit.NANOSECONDS);
        result.whenComplete((r, e) -> {
            timer.cancel(false);
            if (result.isCancelled()) {
                channel.close();
            }
        });
        connect.addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) {
                result.completeExceptionally(f.cause());
                return;
            }
            tls.secure(f.channel(), baseUrl).addListener((Future<Channel> secured) -> {
                if (secured.isSuccess()) {
                    write(secured.getNow(), address, method, target, extraHeaders, body, result);
                } else {
                    result.completeExceptionally(secured.cause());
                    f.channel().close();
                }
            });
        });
        return result;
    }

    private static void write(Channel channel, WorkerAddress address, HttpMethod method, String target,
                              HttpHeaders extraHeaders, byte[] body, CompletableFuture<Reply> result) {
        ByteBuf content = body == null ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(body);
        FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, target, content);
        if (extraHeaders != null) {
            request.headers().set(extraHeaders);
        }
        request.headers().set(HttpHeaderNames.HOST, address.hostHeader());
        request.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        request.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
        if (body != null && !request.headers().contains(HttpHeaderNames.CONTENT_TYPE)) {
            request.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        }
        channel.writeAndFlush(request).addListener((ChannelFutureListener) w -> {
            if (!w.isSuccess()) {
                result.completeExceptionally(w.cause());
                w.channel().close();
            }
        });
    }

    private static final class ReplyHandler extends SimpleChannelInboundHandler<FullHttpResponse> {
        private final CompletableFuture<Reply> result;

        ReplyHandler(CompletableFuture<Reply> result) {
            this.result = result;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse response) {
            result.complete(new Reply(response.status().code(), response.headers().copy(),
                    ByteBufUtil.getBytes(response.content())));
            ctx.close();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            result.completeExceptionally(new ClosedChannelException());
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            result.completeExceptionally(cause instanceof IOException ? cause : new IOException(cause));
            ctx.close();
        }
    }
}
