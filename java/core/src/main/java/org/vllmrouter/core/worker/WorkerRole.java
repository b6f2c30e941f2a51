package org.vllmrouter.core.worker;

/** What a worker does: serves whole requests, or one stage of prefill/decode disaggregation. */
public enum WorkerRole {
    REGULAR,
    PREFILL,
    DECODE
}
