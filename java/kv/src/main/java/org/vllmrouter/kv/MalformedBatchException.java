package org.vllmrouter.kv;

/** A batch that is rejected whole; {@link #reason()} is the metric label. */
public final class MalformedBatchException extends Exception {

    private final KvMetrics.Rejection reason;

    public MalformedBatchException(KvMetrics.Rejection reason, String message) {
        super(message, null, false, false);
        this.reason = reason;
    }

    public KvMetrics.Rejection reason() {
        return reason;
    }
}
