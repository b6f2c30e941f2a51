package org.vllmrouter.mock;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Keeps the worker's in-flight count (what {@code /get_load} reports): a request counts from
 * arrival until the last part of its answer is written, or until its connection closes
 * (a hanging request). One instance per connection.
 */
final class InFlightTracker extends ChannelDuplexHandler {

    private final AtomicInteger inFlight;
    private int open;

    InFlightTracker(AtomicInteger inFlight) {
        this.inFlight = inFlight;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof FullHttpRequest) {
            open++;
            inFlight.incrementAndGet();
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof LastHttpContent && open > 0) {
            open--;
            inFlight.decrementAndGet();
        }
        ctx.write(msg, promise);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        inFlight.addAndGet(-open);
        open = 0;
        ctx.fireChannelInactive();
    }
}
