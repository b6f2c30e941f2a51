package org.vllmrouter.server.http;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.util.ReferenceCountUtil;

/**
 * Rejects requests whose framing is unreadable or ambiguous before anything else sees them: decoder failures and
 * messages carrying both Content-Length and Transfer-Encoding (a request-smuggling shape) get a 400 and the
 * connection closes, since the position of the next request in the stream can no longer be trusted. Repeated
 * Content-Length fields never get here as such: the decoder fails a message whose lengths disagree, and an HTTP/1.1
 * message that repeats one (a decoder failure, so a 400 here), and folds identical ones of HTTP/1.0 into one, as
 * RFC 9112 section 6.3 allows (see {@link HttpCodecs}).
 */
public final class RequestGuard extends ChannelInboundHandlerAdapter {
    private boolean rejecting;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (rejecting) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (msg instanceof HttpRequest request) {
            String problem = null;
            if (request.decoderResult().isFailure()) {
                problem = "Malformed HTTP request: " + request.decoderResult().cause().getMessage();
            } else if (request.headers().contains(HttpHeaderNames.CONTENT_LENGTH)
                    && request.headers().contains(HttpHeaderNames.TRANSFER_ENCODING)) {
                problem = "Request must not carry both Content-Length and Transfer-Encoding";
            }
            if (problem != null) {
                rejecting = true;
                ReferenceCountUtil.release(msg);
                FullHttpResponse response = Responses.jsonError(ctx.alloc(), HttpResponseStatus.BAD_REQUEST, problem);
                response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
                return;
            }
        } else if (msg instanceof HttpObject part && part.decoderResult().isFailure()) {
            rejecting = true;
            ReferenceCountUtil.release(msg);
            ctx.writeAndFlush(Responses.jsonError(ctx.alloc(), HttpResponseStatus.BAD_REQUEST,
                    "Malformed HTTP request body")).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        ctx.fireChannelRead(msg);
    }
}
