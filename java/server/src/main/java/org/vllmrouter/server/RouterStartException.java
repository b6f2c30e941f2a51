package org.vllmrouter.server;

/** The router could not start (a port could not be bound, or no worker became healthy in time). */
public final class RouterStartException extends Exception {
    public RouterStartException(String message, Throwable cause) {
        super(message, cause);
    }
}
