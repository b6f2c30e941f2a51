package org.vllmrouter.server.http;

import io.netty.handler.codec.http.FullHttpRequest;

/** What a {@link FrontendHandler} hands each complete request to. */
@FunctionalInterface
public interface RequestHandler {
    /**
     * Takes ownership of {@code request} and answers it through {@code front}, at once or later on the
     * connection's event loop.
     */
    void handle(FrontendHandler front, FullHttpRequest request);
}
