package org.vllmrouter.discovery;

import org.vllmrouter.core.worker.WorkerRole;

/** A worker as a discovery source sees it: where it answers, its role, and a prefill worker's bootstrap port. */
record Endpoint(String url, WorkerRole role, Integer bootstrapPort) {
}
