package org.vllmrouter.server.trace;

import io.netty.handler.codec.http.HttpHeaders;
import java.util.Map;

/**
 * The router's span of one client request (the server span), as the exchange that serves the request reports to
 * it. Every method of {@link #NONE} does nothing: with tracing off, or for a request that is not traced, this is
 * the span, so the exchange calls it unconditionally and no OpenTelemetry object exists on the request path. Use on
 * the request's event loop.
 */
public interface RequestSpan {
    RequestSpan NONE = new RequestSpan() { };

    /** The routing inputs: the model asked for, the session id (null: none), the policy's name. */
    default void routed(String model, String sessionId, String policy) { }

    /** The worker of attempt {@code attempt} (1 for the first). */
    default void worker(String workerUrl, int attempt) { }

    /**
     * Starts the client span of one call to a worker ({@code stage}: "worker", "prefill", "decode", "render") and
     * writes its context into {@code outgoing} ({@code traceparent}, {@code tracestate}), so the worker's own spans
     * join the trace. {@link #NONE} leaves {@code outgoing} untouched: the client's headers go on verbatim.
     */
    default WorkerCallSpan workerCall(String stage, String workerUrl, String method, String target,
                                      HttpHeaders outgoing) {
        return WorkerCallSpan.NONE;
    }

    /** Bytes of the client's request body and of the answer's body relayed. */
    default void bytes(long requestBytes, long responseBytes) { }

    /** An event on the span, with its attributes (strings and whole numbers). */
    default void event(String name, Map<String, Object> attributes) { }

    /** The status sent to the client. */
    default void status(int status) { }

    /** Ends the span; {@code route} is the route template the request matched. Later calls do nothing. */
    default void end(String route) { }
}
