package org.vllmrouter.server.http;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;

/** Builders for the router's own (non-proxied) responses. */
public final class Responses {
    private Responses() {}

    public static FullHttpResponse text(ByteBufAllocator alloc, HttpResponseStatus status, String body) {
        return build(alloc, status, body, HttpHeaderValues.TEXT_PLAIN + "; charset=utf-8");
    }

    public static FullHttpResponse json(ByteBufAllocator alloc, HttpResponseStatus status, String body) {
        return build(alloc, status, body, HttpHeaderValues.APPLICATION_JSON.toString());
    }

    public static FullHttpResponse jsonError(ByteBufAllocator alloc, HttpResponseStatus status, String message) {
        String type = status.code() >= 500 ? "server_error" : "invalid_request_error";
        return json(alloc, status, Json.error(message, type, status.code()));
    }

    public static FullHttpResponse empty(HttpResponseStatus status) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status);
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
        return r;
    }

    private static FullHttpResponse build(ByteBufAllocator alloc, HttpResponseStatus status, String body, String type) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, ByteBufUtil.writeUtf8(alloc, body));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, type);
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
        return r;
    }
}
