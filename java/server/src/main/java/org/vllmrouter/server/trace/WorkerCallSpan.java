package org.vllmrouter.server.trace;

/** The client span of one call to a worker; {@link #NONE} when the request is not traced. Thread-safe. */
public interface WorkerCallSpan {
    WorkerCallSpan NONE = new WorkerCallSpan() { };

    /** The worker's answer status. */
    default void status(int status) { }

    /** Ends the span; {@code failure} (null: none) says why the call got no usable answer. */
    default void end(Throwable failure) { }
}
