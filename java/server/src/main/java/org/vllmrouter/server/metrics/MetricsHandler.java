package org.vllmrouter.server.metrics;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
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
public final class MetricsHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final PrometheusTextFormatWriter WRITER = PrometheusTextFormatWriter.create();
    private static final String TEXT = HttpHeaderValues.TEXT_PLAIN + "; charset=utf-8";

    private final PrometheusRegistry registry;

    public MetricsHandler(RouterMetrics metrics) {
        this.registry = metrics.registry;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) throws IOException {
        String path = new QueryStringDecoder(request.uri()).path();
        FullHttpResponse response;
        if (!path.equals("/metrics")) {
            response = response(HttpResponseStatus.NOT_FOUND, ByteBufUtil.writeUtf8(ctx.alloc(), "Not found"), TEXT);
        } else if (!request.method().equals(HttpMethod.GET) && !request.method().equals(HttpMethod.HEAD)) {
            response = response(HttpResponseStatus.METHOD_NOT_ALLOWED, Unpooled.EMPTY_BUFFER, null);
        } else {
            ByteBuf body = ctx.alloc().buffer();
            try (ByteBufOutputStream out = new ByteBufOutputStream(body)) {
                WRITER.write(out, registry.scrape());
            } catch (IOException | RuntimeException e) {
                body.release();
                throw e;
            }
            response = response(HttpResponseStatus.OK, body, WRITER.getContentType());
        }
        boolean keepAlive = HttpUtil.isKeepAlive(request);
        HttpUtil.setKeepAlive(response, keepAlive);
        var written = ctx.writeAndFlush(response);
        if (!keepAlive) {
            written.addListener(ChannelFutureListener.CLOSE);
        }
    }

    private static FullHttpResponse response(HttpResponseStatus status, ByteBuf body, String contentType) {
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, body);
        if (contentType != null) {
            response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        }
        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
        return response;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}
