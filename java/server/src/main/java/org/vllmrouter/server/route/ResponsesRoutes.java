package org.vllmrouter.server.route;

import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;
import org.vllmrouter.server.http.Responses;
import org.vllmrouter.server.worker.ControlClient;

/**
 * {@code /v1/responses/{id}} sub-routes: GET fans out to the workers in turn (first 2xx wins, else the last reply),
 * as does {@code .../cancel} (POST); the two sub-routes upstream leaves unimplemented answer 501.
 */
final class ResponsesRoutes {
    private final ControlCalls control;

    ResponsesRoutes(ControlCalls control) {
        this.control = control;
    }

    void item(Reply reply, FullHttpRequest request, RequestPath path) {
        String rest = path.path().substring("/v1/responses/".length());
        HttpMethod method = request.method();
        String[] parts = rest.split("/", -1);
        if (parts.length == 1 && method.equals(HttpMethod.GET)) {
            fanOut(reply, HttpMethod.GET, path.rawTarget());
        } else if (parts.length == 1 && method.equals(HttpMethod.DELETE)) {
            reply.text(HttpResponseStatus.NOT_IMPLEMENTED, "Responses delete endpoint not implemented");
        } else if (parts.length == 2 && parts[1].equals("cancel") && method.equals(HttpMethod.POST)) {
            fanOut(reply, HttpMethod.POST, path.rawTarget());
        } else if (parts.length == 2 && parts[1].equals("input") && method.equals(HttpMethod.GET)) {
            reply.text(HttpResponseStatus.NOT_IMPLEMENTED,
                    "Responses list input items endpoint not implemented");
        } else {
            reply.text(HttpResponseStatus.NOT_FOUND, "Not found");
        }
    }

    private void fanOut(Reply reply, HttpMethod method, String target) {
        EventLoop loop = reply.loop();
        List<String> bases = control.baseUrls();
        if (bases.isEmpty()) {
            reply.text(HttpResponseStatus.SERVICE_UNAVAILABLE, "No workers are available");
            return;
        }
        CompletableFuture<ControlClient.Reply> result = fanOutFrom(loop, method, target, bases, 0, null);
        reply.sendWhenDone(result, answer -> {
            if (answer == null) {
                return Responses.text(reply.alloc(), HttpResponseStatus.INTERNAL_SERVER_ERROR,
                        "Request failed on every worker");
            }
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                    HttpResponseStatus.valueOf(answer.status()), Unpooled.wrappedBuffer(answer.body()));
            String type = answer.headers().get(HttpHeaderNames.CONTENT_TYPE);
            if (type != null) {
                response.headers().set(HttpHeaderNames.CONTENT_TYPE, type);
            }
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, answer.body().length);
            return response;
        });
    }

    private CompletableFuture<ControlClient.Reply> fanOutFrom(EventLoop loop, HttpMethod method, String target,
                                                             List<String> bases, int index, ControlClient.Reply last) {
        if (index >= bases.size()) {
            return CompletableFuture.completedFuture(last);
        }
        return control.send(loop, method, bases.get(index), target)
                .handle((reply, error) -> reply)
                .thenCompose(reply -> reply != null && reply.ok()
                        ? CompletableFuture.completedFuture(reply)
                        : fanOutFrom(loop, method, target, bases, index + 1, reply != null ? reply : last));
    }
}
