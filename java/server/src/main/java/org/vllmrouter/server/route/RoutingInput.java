package org.vllmrouter.server.route;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Supplier;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.HeaderLookup;
import org.vllmrouter.core.session.SessionIdExtractor;
import org.vllmrouter.server.http.AggregatedBody;
import org.vllmrouter.server.http.Reply;

/**
 * What the policies see of a request: its session id and model (the configured headers first, then the configured
 * JSON fields, read in one streaming pass without a tree), once its body has been checked.
 */
final class RoutingInput {
    private static final AsciiString X_SESSION_ID = AsciiString.cached("x-session-id");
    private static final AsciiString JSON = AsciiString.cached("json");

    private final SessionIdExtractor sessionIds;

    RoutingInput(SessionIdExtractor sessionIds) {
        this.sessionIds = sessionIds;
    }

    /**
     * The routing view of {@code request}, or null once the client has its 400 (bad JSON, conflicting or invalid
     * session ids) through {@code reply}. {@code jsonRequired}: the body must be a JSON object; otherwise it
     * is checked only when it is not empty and its content type is JSON (or missing).
     */
    RoutingRequest read(Reply reply, FullHttpRequest request, boolean jsonRequired) {
        HttpHeaders headers = request.headers();
        List<String> ids = headers.getAll(X_SESSION_ID);
        if (ids.size() > 1 && ids.stream().distinct().count() > 1) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST,
                    "Conflicting X-Session-ID headers: a request must carry one session id");
            return null;
        }
        HeaderLookup lookup = headers::get;
        ByteBuf body = request.content();
        boolean json = jsonRequired || looksLikeJson(headers);
        // A body that must be checked is checked in the same pass that finds its routing fields.
        Extraction extraction = jsonRequired || (json && body.isReadable())
                ? sessionIds.extractChecked(lookup, AggregatedBody.source(body), jsonRequired)
                : sessionIds.extractFromHeaders(lookup);
        if (extraction.invalidReason() != null) {
            reply.jsonError(HttpResponseStatus.BAD_REQUEST, extraction.invalidReason());
            return null;
        }
        Supplier<String> text = () -> body.toString(StandardCharsets.UTF_8);
        return RoutingRequest.of(extraction, lookup, text, body.readableBytes());
    }

    private static boolean looksLikeJson(HttpHeaders headers) {
        String type = headers.get(HttpHeaderNames.CONTENT_TYPE);
        return type == null || AsciiString.containsIgnoreCase(type, JSON);
    }
}
