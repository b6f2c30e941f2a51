package org.vllmrouter.mock;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Keeps the worker's in-flight count (what {@code /get_load} reports, like vLLM's running
 * requests): an inference request counts from arrival until the last part of its answer is
 * written, or until its connection closes (a hanging request). One instance per connection;
 * HTTP/1.1 clients wait for an answer before the next request, so a counter suffices.
 */
final class InFlightTracker extends ChannelDuplexHandler {

    private final AtomicInteger inFlight;
    private int open;

    InFlightTracker(AtomicInteger inFlight) {
        this.inFlight = inFlight;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof FullHttpRequest req && req.method().equals(HttpMethod.POST)
                && Routes.INFERENCE.contains(Routes.pathOf(req.uri()))) {
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
