package org.vllmrouter.redis;

/** The store failed or did not answer in time; the message says how, on one line. */
final class StoreUnavailableException extends Exception {
    StoreUnavailableException(String message) {
        super(message, null, false, false);
    }
}
