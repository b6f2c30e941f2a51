package org.vllmrouter.server.worker;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.group.ChannelGroup;
import io.netty.handler.codec.DecoderResultProvider;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.vllmrouter.server.http.HttpCodecs;
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
                        ch.pipeline().addLast(HttpCodecs.client(), new ReplyHandler(result));
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
        // The data plane's body class, header set and String values (see ReplyHandler for why). The proxy path sends
        // a duplicate of the aggregator's composite buffer; an empty or wrapped buffer here made C2 recompile the
        // encoder's content path at every health check.
        CompositeByteBuf aggregated = channel.alloc().compositeBuffer();
        if (body != null) {
            aggregated.addComponent(true, Unpooled.wrappedBuffer(body));
        }
        ByteBuf content = aggregated.duplicate();
        HttpHeaders headers = HttpCodecs.requestHeaders();
        if (extraHeaders != null) {
            headers.set(extraHeaders);
        }
        headers.set(HttpHeaderNames.HOST, address.hostHeader());
        headers.set(HttpHeaderNames.CONNECTION, "close");
        headers.setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
        if (body != null && !headers.contains(HttpHeaderNames.CONTENT_TYPE)) {
            headers.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
        }
        FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, target, content, headers,
                EmptyHttpHeaders.INSTANCE);
        channel.writeAndFlush(request, channel.voidPromise());
    }

    /**
     * Gathers the reply from its parts. Netty's aggregator would do the same, but it is also the data plane's
     * request aggregator: replies passing through it, like control requests passing through the data plane's
     * encoder with other types, made C2 throw out some 60 of the proxy path's compiled methods at every periodic
     * health check under load. This path therefore uses the data plane's own codec, header set and value types, and
     * gathers replies here.
     */
    private static final class ReplyHandler extends ChannelInboundHandlerAdapter {
        private final CompletableFuture<Reply> result;
        private HttpResponse head;
        private ByteArrayOutputStream body;

        ReplyHandler(CompletableFuture<Reply> result) {
            this.result = result;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof DecoderResultProvider part && part.decoderResult().isFailure()) {
                    fail(ctx, new IOException("Malformed reply: " + part.decoderResult().cause().getMessage()));
                    return;
                }
                if (msg instanceof HttpResponse response) {
                    // An informational answer comes before the final one; its parts are dropped.
                    boolean informational = response.status().codeClass() == HttpStatusClass.INFORMATIONAL;
                    head = informational ? null : response;
                    body = informational ? null : new ByteArrayOutputStream();
                }
                if (msg instanceof HttpContent content && head != null) {
                    ByteBuf bytes = content.content();
                    if (body.size() + bytes.readableBytes() > MAX_REPLY_BYTES) {
                        fail(ctx, new IOException("Reply larger than " + MAX_REPLY_BYTES + " bytes"));
                        return;
                    }
                    bytes.getBytes(bytes.readerIndex(), body, bytes.readableBytes());
                    if (content instanceof LastHttpContent) {
                        result.complete(new Reply(head.status().code(), head.headers(), body.toByteArray()));
                        ctx.close();
                    }
                }
            } catch (IOException e) {
                fail(ctx, e);
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private void fail(ChannelHandlerContext ctx, IOException cause) {
            result.completeExceptionally(cause);
            ctx.close();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            result.completeExceptionally(new ClosedChannelException());
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            fail(ctx, cause instanceof IOException io ? io : new IOException(cause));
        }
    }
}
