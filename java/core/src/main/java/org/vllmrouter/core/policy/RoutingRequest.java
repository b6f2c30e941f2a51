package org.vllmrouter.core.policy;

import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.HeaderLookup;

/** What a policy may look at: the extracted session id and model, the headers, and the body (its size and text). */
public final class RoutingRequest {
    /**
     * UTF-8 bytes of a request body per prompt token, for {@link #promptTokens()}: English text runs about four
     * characters a token, and the JSON around the messages is small next to a long prompt.
     */
    public static final int BODY_BYTES_PER_TOKEN = 4;

    private final String sessionId;
    private final String model;
    private final HeaderLookup headers;
    private final Supplier<String> textSource;
    private final long bodyBytes;
    private String text;
    private PrefixResidency prefix = PrefixResidency.UNKNOWN;

    private RoutingRequest(String sessionId, String model, HeaderLookup headers, Supplier<String> textSource,
                           long bodyBytes) {
        this.sessionId = sessionId;
        this.model = model;
        this.headers = headers == null ? HeaderLookup.NONE : headers;
        this.textSource = textSource;
        this.bodyBytes = bodyBytes;
    }

    /**
     * {@code text} is decoded only if a policy asks for it, and at most once; {@code bodyBytes} is the body's size
     * as received.
     */
    public static RoutingRequest of(Extraction extraction, HeaderLookup headers, Supplier<String> text,
                                    long bodyBytes) {
        return new RoutingRequest(extraction.sessionId(), extraction.model(), headers, text, bodyBytes);
    }

    /** A request with just a session id (may be null) and a body text (sized in UTF-8); for tests and benchmarks. */
    public static RoutingRequest of(String sessionId, String model, String text) {
        return new RoutingRequest(sessionId, model, HeaderLookup.NONE, () -> text,
                text.getBytes(StandardCharsets.UTF_8).length);
    }

    /** Null when the request belongs to no session. */
    public String sessionId() {
        return sessionId;
    }

    /** The request's top-level model, null when it names none. */
    public String model() {
        return model;
    }

    /** The body's size in bytes. */
    public long bodyBytes() {
        return bodyBytes;
    }

    /**
     * An estimate of the prompt's tokens from the body's size alone ({@link #BODY_BYTES_PER_TOKEN}): no parse, so
     * it costs nothing on the routing path; a policy compares it between requests, where a constant factor cancels.
     */
    public long promptTokens() {
        return bodyBytes / BODY_BYTES_PER_TOKEN;
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
