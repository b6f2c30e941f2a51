package org.vllmrouter.server.http;

/** What a {@link FrontendHandler} hands each complete request to. */
@FunctionalInterface
public interface RequestHandler {
    /** Answers the request {@code reply} holds, at once or later on the connection's event loop. */
    void handle(Reply reply);
}
