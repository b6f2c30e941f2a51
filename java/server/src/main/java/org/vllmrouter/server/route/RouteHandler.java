package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;

/** Answers the requests of one route, once the route table's guards let them through. */
@FunctionalInterface
interface RouteHandler {
    /** Answers {@code request}, which {@code reply} holds, through {@code reply}. */
    void handle(Reply reply, FullHttpRequest request, RequestPath path);
}
