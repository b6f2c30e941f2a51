package org.vllmrouter.redis;

/** The store failed or did not answer in time; the message says how, on one line. */
final class StoreUnavailableException extends Exception {
    StoreUnavailableException(String message) {
        super(message, null, false, false);
    }

    /** The innermost message of a failure, on one line. */
    static String oneLine(Throwable failure) {
        String message = failure.toString();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t.getMessage() != null && !t.getMessage().isBlank()) {
                message = t.getMessage();
            }
        }
        return message.replaceAll("\\s*\\R\\s*", " ").trim();
    }
}
