package org.vllmrouter.server.http;

import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Netty's aggregator with the body limit ({@code max_payload_size}), answering a request over the limit so that the
 * client reads the answer. Netty's own answer closes the connection at once when the request is not keep-alive,
 * while the client is still sending its body: the client's next write fails (a broken pipe or a reset) before it
 * reads the 413. Here the 413 goes out with {@code Connection: close}, then the connection lingers as nginx's does:
 * the rest of the body is read and dropped, and the connection closes once the client has sent it all, or has sent
 * nothing for {@link #LINGER_IDLE}, or after {@link #LINGER_TOTAL} in any case.
 */
public final class BodyAggregator extends HttpObjectAggregator {
    static final Duration LINGER_IDLE = Duration.ofSeconds(5);
    static final Duration LINGER_TOTAL = Duration.ofSeconds(30);

    private final int maxBody;
    private ChannelFuture answered;
    private ScheduledFuture<?> idle;
    private ScheduledFuture<?> total;

    public BodyAggregator(int maxBody) {
        super(maxBody);
        this.maxBody = maxBody;
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) throws Exception {
        if (!(oversized instanceof HttpRequest)) {
            super.handleOversizedMessage(ctx, oversized);
            return;
        }
        FullHttpResponse tooLarge = Responses.jsonError(ctx.alloc(), HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE,
                "Request body is larger than the router's limit of " + maxBody + " bytes (max_payload_size)");
        tooLarge.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        answered = ctx.writeAndFlush(tooLarge);
        // The frontend may have paused reads (pipelined requests); the rest of the body must still be read.
        ctx.channel().config().setAutoRead(true);
        total = ctx.executor().schedule(this::closeAfterAnswer, LINGER_TOTAL.toMillis(), TimeUnit.MILLISECONDS);
        rearmIdle(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (answered == null) {
            super.channelRead(ctx, msg);
            return;
        }
        boolean last = msg instanceof LastHttpContent;
        ReferenceCountUtil.release(msg);
        if (last) {
            closeAfterAnswer();
        } else {
            rearmIdle(ctx);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        cancelTimers();
        super.channelInactive(ctx);
    }

    private void rearmIdle(ChannelHandlerContext ctx) {
        if (idle != null) {
            idle.cancel(false);
        }
        idle = ctx.executor().schedule(this::closeAfterAnswer, LINGER_IDLE.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void closeAfterAnswer() {
        cancelTimers();
        answered.addListener(ChannelFutureListener.CLOSE);
    }

    private void cancelTimers() {
        if (idle != null) {
            idle.cancel(false);
        }
        if (total != null) {
            total.cancel(false);
        }
    }
}
