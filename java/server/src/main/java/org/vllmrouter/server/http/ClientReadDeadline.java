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
    /** When the request being read began; meaningful only while {@link #reading}. */
    private long readStartNanos;
    private boolean reading;
    /**
     * One timer per connection, not one per request: a keep-alive client sends request after request, and a timer
     * scheduled and cancelled for each would cost the event loop a queue insert and removal every time. When it
     * fires it checks the request being read now, as Netty's IdleStateHandler does, and re-arms only for that one.
     */
    private ScheduledFuture<?> timer;

    public ClientReadDeadline(Duration timeout) {
        this.timeoutNanos = timeout.toNanos();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!reading && msg instanceof ByteBuf bytes && bytes.isReadable()) {
            reading = true;
            readStartNanos = System.nanoTime();
            if (timer == null) {
                timer = ctx.executor().schedule(this::check, timeoutNanos, TimeUnit.NANOSECONDS);
            }
        }
        ctx.fireChannelRead(msg);
    }

    /** The frontend has the whole request: the client is on time. */
    public void requestRead() {
        reading = false;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        reading = false;
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
        ctx.fireChannelInactive();
    }

    private void check() {
        timer = null;
        if (!reading) {
            return;
        }
        long left = readStartNanos + timeoutNanos - System.nanoTime();
        if (left <= 0) {
            ctx.close();
        } else {
            timer = ctx.executor().schedule(this::check, left, TimeUnit.NANOSECONDS);
        }
    }
}
