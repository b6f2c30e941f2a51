package org.vllmrouter.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;

/** The Prometheus listener: {@code GET /metrics} in the text exposition format; anything else is 404. */
@ChannelHandler.Sharable
final class MetricsHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final PrometheusTextFormatWriter WRITER = PrometheusTextFormatWriter.create();

    private final PrometheusRegistry registry;

    MetricsHandler(PrometheusRegistry registry) {
        this.registry = registry;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) throws IOException {
        String path = new QueryStringDecoder(request.uri()).path();
        FullHttpResponse response;
        if (!path.equals("/metrics")) {
            response = Responses.text(ctx.alloc(), HttpResponseStatus.NOT_FOUND, "Not found");
        } else if (!request.method().equals(HttpMethod.GET) && !request.method().equals(HttpMethod.HEAD)) {
            response = Responses.empty(HttpResponseStatus.METHOD_NOT_ALLOWED);
        } else {
            ByteBuf body = ctx.alloc().buffer();
            try (ByteBufOutputStream out = new ByteBufOutputStream(body)) {
                WRITER.write(out, registry.scrape());
            } catch (IOException | RuntimeException e) {
                body.release();
                throw e;
            }
            response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, body);
            response.headers().set(HttpHeaderNames.CONTENT_TYPE, WRITER.getContentType());
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
        }
        boolean keepAlive = HttpUtil.isKeepAlive(request);
        HttpUtil.setKeepAlive(response, keepAlive);
        var written = ctx.writeAndFlush(response);
        if (!keepAlive) {
            written.addListener(ChannelFutureListener.CLOSE);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}
