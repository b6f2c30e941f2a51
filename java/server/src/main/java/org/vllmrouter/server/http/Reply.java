package org.vllmrouter.server.http;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.vllmrouter.server.trace.RequestSpan;

/**
 * The answer to one client request, and the owner of that request (its body buffer): a route reads the request and
 * sends a response through its reply, or hands the reply to an exchange that streams the answer. The reply releases
 * the request exactly once, whichever way the request ends, so no route touches a buffer's reference count. Use on
 * the connection's event loop.
 */
public final class Reply {
    private final FrontendHandler front;
    /** Null once released. */
    private FullHttpRequest request;

    Reply(FrontendHandler front, FullHttpRequest request) {
        this.front = front;
        this.request = request;
    }

    /** The request, valid until the reply is sent or discarded. */
    public FullHttpRequest request() {
        return request;
    }

    /** The request's span, which the exchange serving it reports to ({@link RequestSpan#NONE} when not traced). */
    public RequestSpan span() {
        return front.span();
    }

    /** The connection the answer goes out on, for an exchange that streams it part by part. */
    public FrontendHandler front() {
        return front;
    }

    public ByteBufAllocator alloc() {
        return front.context().alloc();
    }

    /** The client connection's event loop: everything about this request runs there. */
    public EventLoop loop() {
        return front.context().channel().eventLoop();
    }

    public boolean clientActive() {
        return front.isActive();
    }

    /** Answers with {@code response}, releasing the request first. */
    public void send(FullHttpResponse response) {
        discard();
        front.respond(response);
    }

    public void text(HttpResponseStatus status, String body) {
        send(Responses.text(alloc(), status, body));
    }

    public void json(HttpResponseStatus status, String body) {
        send(Responses.json(alloc(), status, body));
    }

    public void jsonError(HttpResponseStatus status, String message) {
        send(Responses.jsonError(alloc(), status, message));
    }

    /**
     * Answers with what {@code toResponse} makes of {@code future}'s value once it completes, on the client's event
     * loop; a failure is a 500. The request is released at once: the answer no longer needs it.
     */
    public <T> void sendWhenDone(CompletableFuture<T> future, Function<T, FullHttpResponse> toResponse) {
        discard();
        EventLoop loop = loop();
        future.whenComplete((value, error) -> loop.execute(() -> {
            if (error != null) {
                text(HttpResponseStatus.INTERNAL_SERVER_ERROR, "Internal error: " + error.getMessage());
            } else {
                send(toResponse.apply(value));
            }
        }));
    }

    /** The request goes on with {@code body} (owned by the reply from now on) instead of the body it came with. */
    public void replaceBody(ByteBuf body) {
        FullHttpRequest old = request;
        request = old.replace(body);
        old.release();
    }

    /**
     * Releases the request without answering through this reply: the client has left, or an exchange streamed the
     * answer itself. Releasing twice is a no-op.
     */
    public void discard() {
        FullHttpRequest held = request;
        if (held != null) {
            request = null;
            held.release();
        }
    }
}
