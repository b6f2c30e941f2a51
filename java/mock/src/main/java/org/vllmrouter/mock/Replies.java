package org.vllmrouter.mock;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/** Writes complete answers: JSON, plain text, and vLLM-style JSON errors. */
final class Replies {

    static final ObjectMapper JSON = new ObjectMapper();

    private Replies() {}

    /** The head of an SSE answer, chunked; it closes the connection after the stream unless {@code keepAlive}. */
    static HttpResponse sseHead(boolean keepAlive) {
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream");
        head.headers().set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
        HttpUtil.setTransferEncodingChunked(head, true);
        if (!keepAlive) {
            head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        return head;
    }

    static void json(ChannelHandlerContext ctx, boolean keepAlive, int status, JsonNode body) {
        byte[] bytes;
        try {
            bytes = JSON.writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise a mock answer", e);
        }
        send(ctx, keepAlive, status, "application/json", bytes);
    }

    static void text(ChannelHandlerContext ctx, boolean keepAlive, int status, String body) {
        send(ctx, keepAlive, status, "text/plain; charset=utf-8", body.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * vLLM's error shape ({@code {"error":{"message","type","param","code"}}}), which is also
     * what OpenAI clients and SkyRL read ({@code body["error"]["message"]}).
     */
    static void error(ChannelHandlerContext ctx, boolean keepAlive, int status, String message,
                      String workerId) {
        json(ctx, keepAlive, status, errorBody(status, message, workerId));
    }

    static ObjectNode errorBody(int status, String message, String workerId) {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode err = root.putObject("error");
        err.put("message", message);
        err.put("type", errorType(status));
        err.putNull("param");
        err.put("code", status);
        root.put("worker_id", workerId);
        return root;
    }

    private static String errorType(int status) {
        return switch (status) {
            case 400 -> "BadRequestError";
            case 401 -> "AuthenticationError";
            case 404 -> "NotFoundError";
            case 405 -> "MethodNotAllowedError";
            case 413 -> "RequestTooLargeError";
            case 429 -> "RateLimitError";
            case 503 -> "ServiceUnavailableError";
            default -> status >= 500 ? "InternalServerError" : "Error";
        };
    }

    private static void send(ChannelHandlerContext ctx, boolean keepAlive, int status, String type,
                             byte[] body) {
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                HttpResponseStatus.valueOf(status), Unpooled.wrappedBuffer(body));
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, type);
        res.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        if (!keepAlive) {
            res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        var future = ctx.writeAndFlush(res);
        if (!keepAlive) {
            future.addListener(ChannelFutureListener.CLOSE);
        }
    }
}
