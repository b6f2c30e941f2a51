package org.vllmrouter.mock;

import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import java.util.List;
import java.util.Map;

/** Records every request (bytes as received) on its worker, then passes it on unchanged. */
@ChannelHandler.Sharable
final class RequestCapture extends ChannelInboundHandlerAdapter {

    private final MockWorker worker;

    RequestCapture(MockWorker worker) {
        this.worker = worker;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof FullHttpRequest req && worker.knobs().captureLimit() > 0) {
            String path = Routes.pathOf(req.uri());
            if (!path.equals(Routes.CAPTURED)) {
                List<Map.Entry<String, String>> headers = List.copyOf(req.headers().entries());
                worker.capture(new CapturedRequest(req.method().name(), req.uri(), path, headers,
                        ByteBufUtil.getBytes(req.content()), System.currentTimeMillis()));
            }
        }
        ctx.fireChannelRead(msg);
    }
}
