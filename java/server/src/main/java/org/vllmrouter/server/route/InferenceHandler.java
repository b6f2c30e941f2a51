package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import org.vllmrouter.server.http.Reply;
import org.vllmrouter.server.http.RequestPath;

/** Answers the requests of one inference route, once the admission limiter let them in. */
@FunctionalInterface
interface InferenceHandler {
    /**
     * Answers {@code request}, which {@code reply} holds, through {@code reply}; runs {@code admission} once to give
     * the admission token back (the proxy does so as soon as the response head is out).
     */
    void handle(Reply reply, FullHttpRequest request, RequestPath path, Runnable admission);
}
