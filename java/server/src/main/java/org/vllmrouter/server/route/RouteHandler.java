package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import org.vllmrouter.server.http.FrontendHandler;
import org.vllmrouter.server.http.RequestPath;

/** Answers the requests of one route, once the route table's guards let them through. */
@FunctionalInterface
interface RouteHandler {
    /** Takes ownership of {@code request} and answers it through {@code front}. */
    void handle(FrontendHandler front, FullHttpRequest request, RequestPath path);
}
