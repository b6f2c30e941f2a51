package org.vllmrouter.mock.rollout;

/** A trace line that cannot be replayed; the message names the line (1-based) and what is wrong with it. */
public final class TraceFormatException extends Exception {
    private final int line;

    TraceFormatException(int line, String reason) {
        super("trace line " + line + ": " + reason);
        this.line = line;
    }

    public int line() {
        return line;
    }
}
