package org.vllmrouter.core.session;

/**
 * What one pass over a request found: its session id (null if none), its top-level {@code model}
 * string (null if none) and, when the session id is unusable, why ({@code invalidReason} non-null:
 * the HTTP layer answers 400 with it and the id is not used).
 */
public record Extraction(String sessionId, String model, String invalidReason) {
    public static final Extraction NONE = new Extraction(null, null, null);

    public boolean isInvalid() {
        return invalidReason != null;
    }
}
