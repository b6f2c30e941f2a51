package org.vllmrouter.server.route;

import io.netty.handler.codec.http.FullHttpRequest;
import org.vllmrouter.server.http.FrontendHandler;
import org.vllmrouter.server.http.RequestPath;

/** Answers the requests of one inference route, once the admission limiter let them in. */
@FunctionalInterface
interface InferenceHandler {
    /**
     * Takes ownership of {@code request} and answers it through {@code front}; runs {@code admission} once to give
     * the admission token back (the proxy does so as soon as the response head is out).
     */
    void handle(FrontendHandler front, FullHttpRequest request, RequestPath path, Runnable admission);
}
