package org.vllmrouter.discovery;

/** A discovery source that cannot start (e.g. its listen address is taken); the message is one line for the user. */
public final class DiscoveryStartException extends Exception {
    DiscoveryStartException(String message, Throwable cause) {
        super(message, cause);
    }
}
