package org.vllmrouter.core.policy;

import java.util.function.Supplier;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.HeaderLookup;

/** What a policy may look at: the extracted session id and model, the headers, and the body text. */
public final class RoutingRequest {
    private final String sessionId;
    private final String model;
    private final HeaderLookup headers;
    private final Supplier<String> textSource;
    private String text;
    private PrefixResidency prefix = PrefixResidency.UNKNOWN;

    private RoutingRequest(String sessionId, String model, HeaderLookup headers, Supplier<String> textSource) {
        this.sessionId = sessionId;
        this.model = model;
        this.headers = headers == null ? HeaderLookup.NONE : headers;
        this.textSource = textSource;
    }

    /** {@code text} is decoded only if a policy asks for it, and at most once. */
    public static RoutingRequest of(Extraction extraction, HeaderLookup headers, Supplier<String> text) {
        return new RoutingRequest(extraction.sessionId(), extraction.model(), headers, text);
    }

    /** A request with just a session id (may be null) and a body text; for tests and benchmarks. */
    public static RoutingRequest of(String sessionId, String model, String text) {
        return new RoutingRequest(sessionId, model, HeaderLookup.NONE, () -> text);
    }

    /** Null when the request belongs to no session. */
    public String sessionId() {
        return sessionId;
    }

    /** The request's top-level model, null when it names none. */
    public String model() {
        return model;
    }

    public HeaderLookup headers() {
        return headers;
    }

    /** What each candidate already holds of the prompt; {@link PrefixResidency#UNKNOWN} unless the route found it. */
    public PrefixResidency prefix() {
        return prefix;
    }

    /** Attaches the prompt's prefix residency (before the policy selects); returns this request. */
    public RoutingRequest withPrefix(PrefixResidency residency) {
        this.prefix = residency;
        return this;
    }

    /** The full body as text ("" when there is none). Not thread-safe: one request, one thread. */
    public String text() {
        if (text == null) {
            String t = textSource == null ? null : textSource.get();
            text = t == null ? "" : t;
        }
        return text;
    }
}
