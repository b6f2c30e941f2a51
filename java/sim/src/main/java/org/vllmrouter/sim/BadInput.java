package org.vllmrouter.sim;

/** Input a command refuses before it runs anything; its message is the whole error line. */
final class BadInput extends Exception {
    BadInput(String message) {
        super(message);
    }
}
