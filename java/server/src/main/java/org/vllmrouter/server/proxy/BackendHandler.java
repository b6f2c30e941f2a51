package org.vllmrouter.server.proxy;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpObject;
import io.netty.util.ReferenceCountUtil;

/**
 * The worker side of the proxy: hands every response part of a pooled worker connection to the exchange that
 * currently owns the connection. Parts arriving while no exchange owns it are released.
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

    private Listener listener;

    static void attach(Channel channel, Listener listener) {
        channel.pipeline().get(BackendHandler.class).listener = listener;
    }

    static void detach(Channel channel) {
        BackendHandler handler = channel.pipeline().get(BackendHandler.class);
        if (handler != null) {
            handler.listener = null;
        }
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
            current.onBackendClosed(new java.nio.channels.ClosedChannelException());
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
