package org.vllmrouter.core.session;

/** A session store could not be opened; the message is one line and shows no password. */
public final class SessionStoreException extends Exception {
    public SessionStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
