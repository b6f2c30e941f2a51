package org.vllmrouter.server.http;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The requests between their arrival and the end of their response, over every connection of one router, and
 * whether the router is draining: once it is, new requests are turned away and shutdown waits for the count to
 * reach zero.
 */
public final class InFlightRequests {
    private final AtomicInteger count = new AtomicInteger();
    private volatile boolean draining;

    void started() {
        count.incrementAndGet();
    }

    void ended() {
        count.decrementAndGet();
    }

    boolean draining() {
        return draining;
    }

    /** From now on new requests are answered 503 and their connection closes. */
    public void drain() {
        draining = true;
    }

    public int count() {
        return count.get();
    }
}
