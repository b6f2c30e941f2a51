package org.vllmrouter.mock;

/** A request the mock cannot serve; answered 400 with a vLLM-style JSON error. */
final class BadRequestException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BadRequestException(String message) {
        super(message, null, false, false);
    }
}
