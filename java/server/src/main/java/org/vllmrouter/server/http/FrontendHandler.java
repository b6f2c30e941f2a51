package org.vllmrouter.server.http;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.vllmrouter.server.metrics.RouterMetrics;
import org.vllmrouter.server.trace.RequestSpan;
import org.vllmrouter.server.trace.RequestTracer;

/**
 * The client side of one connection: takes aggregated requests one at a time (pipelined ones wait their turn, so
 * responses keep request order), hands each to the {@link RequestHandler} with the {@link Reply} that owns it
 * (turning them away instead while the router drains), and offers the response-writing calls replies and proxy
 * exchanges use. Every response is
 * counted in the HTTP request metrics under the route label its handler set. Everything runs on the connection's
 * event loop.
 *
 * <p>Responses are written with the void promise: nothing waits on them (a write that fails closes the connection,
 * through {@link #exceptionCaught}), and a promise per write was a twentieth of the proxy path's allocation.
 */
public final class FrontendHandler extends ChannelInboundHandlerAdapter {

    /** Whatever is producing the current response and must hear about the client. */
    public interface Exchange {
        void onClientGone();

        void onClientWritable();
    }

    /** Route label of a request no route claimed (the proxy fallback, bad paths). */
    public static final String UNMATCHED = "unmatched";

    private static final Logger LOG = Logger.getLogger(FrontendHandler.class.getName());
    /** Pipelined requests beyond this many stop reads until the queue drains. */
    private static final int MAX_QUEUED = 16;

    private final RequestHandler handler;
    private final InFlightRequests inFlight;
    private final RouterMetrics metrics;
    private final Runnable onRequestRead;
    private final RequestTracer tracer;
    private final ArrayDeque<FullHttpRequest> queued = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    private boolean busy;
    private boolean keepAlive;
    private Exchange exchange;
    private String method;
    private String routeLabel;
    /** The current request's span; {@link RequestSpan#NONE} between requests and when it is not traced. */
    private RequestSpan span = RequestSpan.NONE;

    /**
     * {@code onRequestRead} runs as each request arrives whole (the client's read deadline ends there); {@code tracer}
     * starts each request's span, which ends when its response is complete or the client leaves.
     */
    public FrontendHandler(RequestHandler handler, InFlightRequests inFlight, RouterMetrics metrics,
                           Runnable onRequestRead, RequestTracer tracer) {
        this.handler = handler;
        this.inFlight = inFlight;
        this.metrics = metrics;
        this.onRequestRead = onRequestRead;
        this.tracer = tracer;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest request)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        onRequestRead.run();
        if (busy) {
            queued.addLast(request);
            if (queued.size() >= MAX_QUEUED) {
                ctx.channel().config().setAutoRead(false);
            }
            return;
        }
        start(request);
    }

    private void start(FullHttpRequest request) {
        busy = true;
        inFlight.started();
        keepAlive = HttpUtil.isKeepAlive(request);
        method = request.method().name();
        routeLabel = UNMATCHED;
        span = tracer.start(request);
        Reply reply = new Reply(this, request);
        if (inFlight.draining()) {
            FullHttpResponse response = Responses.text(ctx.alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
                    "Router is shutting down");
            response.headers().set(HttpHeaderNames.CONNECTION, "close");
            reply.send(response);
            return;
        }
        try {
            handler.handle(reply);
        } catch (RuntimeException e) {
            // A bug, not bad input: the request's state is unknown, so the connection goes (and its request with it).
            LOG.log(Level.SEVERE, "Unexpected failure handling " + method + " " + request.uri(), e);
            ctx.close();
        }
    }

    public ChannelHandlerContext context() {
        return ctx;
    }

    /** The current request's span: the exchange serving it reports what it did. */
    public RequestSpan span() {
        return span;
    }

    /** The route template the current request matched, for the HTTP request metrics. */
    public void setRouteLabel(String routeLabel) {
        this.routeLabel = routeLabel;
    }

    /** Registers the producer of the current response so a disconnect or writability change reaches it. */
    public void setExchange(Exchange exchange) {
        this.exchange = exchange;
    }

    public boolean isActive() {
        return ctx.channel().isActive();
    }

    public boolean isWritable() {
        return ctx.channel().isWritable();
    }

    /** Writes a complete response and moves on to the next request; routes answer through their {@link Reply}. */
    void respond(FullHttpResponse response) {
        metrics.httpRequest(routeLabel, method, response.status().code());
        span.status(response.status().code());
        if (!HttpUtil.isKeepAlive(response)) {
            keepAlive = false;
        }
        applyConnectionHeader(response);
        ctx.writeAndFlush(response, ctx.voidPromise());
        complete();
    }

    public void sendHead(HttpResponse head) {
        metrics.httpRequest(routeLabel, method, head.status().code());
        span.status(head.status().code());
        applyConnectionHeader(head);
        ctx.write(head, ctx.voidPromise());
    }

    /** Takes ownership of {@code part}; written now, flushed at the end of the worker's read burst. */
    public void sendPart(HttpContent part) {
        ctx.write(part, ctx.voidPromise());
        if (part instanceof LastHttpContent) {
            ctx.flush();
            complete();
        }
    }

    public void flush() {
        ctx.flush();
    }

    /** Ends a response that cannot be completed (its head is already out): the client sees the connection close. */
    public void abort() {
        exchange = null;
        ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }

    private void applyConnectionHeader(HttpResponse response) {
        if (keepAlive) {
            if (!response.protocolVersion().isKeepAliveDefault()) {
                response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            }
        } else {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
    }

    private void complete() {
        exchange = null;
        endSpan();
        if (busy) {
            busy = false;
            inFlight.ended();
        }
        if (!keepAlive) {
            ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            queued.forEach(ReferenceCountUtil::release);
            queued.clear();
            return;
        }
        FullHttpRequest next = queued.pollFirst();
        if (!ctx.channel().config().isAutoRead() && queued.size() < MAX_QUEUED) {
            ctx.channel().config().setAutoRead(true);
        }
        if (next != null) {
            ctx.channel().eventLoop().execute(() -> start(next));
        }
    }

    private void endSpan() {
        RequestSpan ended = span;
        span = RequestSpan.NONE;
        ended.end(routeLabel.equals(UNMATCHED) ? null : routeLabel);
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable() && exchange != null) {
            exchange.onClientWritable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Exchange current = exchange;
        exchange = null;
        queued.forEach(ReferenceCountUtil::release);
        queued.clear();
        if (current != null) {
            current.onClientGone();
        }
        endSpan();
        if (busy) {
            busy = false;
            inFlight.ended();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        // A connection idle between requests, or a client that stopped sending half-way through a request.
        if (evt instanceof IdleStateEvent && !busy) {
            ctx.close();
        } else {
            ctx.fireUserEventTriggered(evt);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}
