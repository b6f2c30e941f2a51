package org.vllmrouter.server.http;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Bounds the time a client may take to send one request, headers and body: from the request's first byte until the
 * frontend has it whole. A slow-loris client that trickles a byte now and then never trips the idle timeout, and
 * would hold its connection (and a file descriptor) for as long as it likes; past the deadline the connection
 * closes. It sits first in the pipeline, where the bytes arrive, and the frontend calls {@link #requestRead} once
 * the request is whole. Time spent waiting for the router's own answer does not count.
 */
public final class ClientReadDeadline extends ChannelInboundHandlerAdapter {
    /** As nginx's client_header_timeout plus client_body_timeout. */
    public static final Duration DEFAULT = Duration.ofSeconds(120);

    private final long timeoutNanos;
    private ChannelHandlerContext ctx;
    private ScheduledFuture<?> deadline;

    public ClientReadDeadline(Duration timeout) {
        this.timeoutNanos = timeout.toNanos();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (deadline == null && msg instanceof ByteBuf bytes && bytes.isReadable()) {
            deadline = ctx.executor().schedule(this::expired, timeoutNanos, TimeUnit.NANOSECONDS);
        }
        ctx.fireChannelRead(msg);
    }

    /** The frontend has the whole request: the client is on time. */
    public void requestRead() {
        if (deadline != null) {
            deadline.cancel(false);
            deadline = null;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        requestRead();
        ctx.fireChannelInactive();
    }

    private void expired() {
        deadline = null;
        ctx.close();
    }
}
