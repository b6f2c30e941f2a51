package org.vllmrouter.server.proxy;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpObject;
import io.netty.util.ReferenceCountUtil;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;

/**
 * The worker side of the proxy: hands every response part of a pooled worker connection to the exchange that
 * currently owns the connection. Parts arriving while no exchange owns it are released. It also stands for its
 * connection in {@link WorkerPools}, and carries the pool's bookkeeping, so taking and returning a connection
 * costs no lookup and no allocation.
 */
final class BackendHandler extends ChannelInboundHandlerAdapter {

    /** The exchange currently using a worker connection; all calls arrive on the connection's event loop. */
    interface Listener {
        /** Takes ownership of {@code part}. */
        void onBackendPart(HttpObject part);

        void onBackendReadComplete();

        /** The connection closed or failed before the exchange released it. */
        void onBackendClosed(Throwable cause);
    }

    private Channel channel;
    private Listener listener;
    /** The idle connections of this connection's (event loop, worker) pool; set when it may join them. */
    ArrayDeque<BackendHandler> pool;
    /** Since when the connection has been idle in its pool. */
    long idleSinceNanos;
    /** The connection has carried an exchange before. */
    boolean used;

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        channel = ctx.channel();
    }

    Channel channel() {
        return channel;
    }

    void attach(Listener listener) {
        this.listener = listener;
    }

    void detach() {
        listener = null;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (listener != null && msg instanceof HttpObject part) {
            listener.onBackendPart(part);
        } else {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (listener != null) {
            listener.onBackendReadComplete();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Listener current = listener;
        listener = null;
        if (current != null) {
            current.onBackendClosed(new ClosedChannelException());
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Listener current = listener;
        listener = null;
        ctx.close();
        if (current != null) {
            current.onBackendClosed(cause);
        }
    }
}
