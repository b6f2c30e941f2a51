package org.vllmrouter.mock;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpResponse;

/** Stamps {@code X-Worker-Id} on every response, so a client can tell which worker answered. */
@ChannelHandler.Sharable
final class WorkerIdentity extends ChannelOutboundHandlerAdapter {

    static final String HEADER = "X-Worker-Id";

    private final MockWorker worker;

    WorkerIdentity(MockWorker worker) {
        this.worker = worker;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof HttpResponse res) {
            res.headers().set(HEADER, worker.id());
        }
        ctx.write(msg, promise);
    }
}
