package org.vllmrouter.server.proxy;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.util.List;
import org.vllmrouter.server.http.RequestIdHandler;

/**
 * Which headers cross the proxy: hop-by-hop ones never do; the router sets Host itself, and Content-Length whenever
 * the client's (kept, since nearly every request has one that fits) does not give the length of the body sent on.
 */
public final class Hop {
    /** Tells a data-parallel worker which of its ranks serves the request. */
    public static final String DP_RANK_HEADER = "X-data-parallel-rank";

    public static final List<AsciiString> RESPONSE_HOP_HEADERS = List.of(
            HttpHeaderNames.CONNECTION, AsciiString.cached("keep-alive"), HttpHeaderNames.PROXY_AUTHENTICATE,
            HttpHeaderNames.PROXY_AUTHORIZATION, HttpHeaderNames.TE, HttpHeaderNames.TRAILER,
            AsciiString.cached("trailers"), HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderNames.UPGRADE,
            RequestIdHandler.X_REQUEST_ID);

    private static final List<AsciiString> REQUEST_DROPPED = List.of(
            HttpHeaderNames.CONNECTION, AsciiString.cached("keep-alive"), AsciiString.cached("proxy-connection"),
            HttpHeaderNames.PROXY_AUTHORIZATION, HttpHeaderNames.TE, HttpHeaderNames.TRAILER,
            AsciiString.cached("trailers"), HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderNames.UPGRADE,
            HttpHeaderNames.HOST, HttpHeaderNames.EXPECT,
            AsciiString.cached("x-data-parallel-rank"));

    private Hop() {}

    /**
     * Makes a client request's headers the ones to forward to a worker, in place, and returns them:
     * {@code keepAuthorization} is false on the proxy fallback. In place rather than a copy per request: the route
     * owns the decoded request, and what still reads its headers afterwards (session ids, CORS's Origin, the
     * render call's Authorization) reads headers that are kept.
     */
    public static HttpHeaders forwardable(HttpHeaders client, boolean keepAuthorization) {
        for (AsciiString name : REQUEST_DROPPED) {
            client.remove(name);
        }
        if (!keepAuthorization) {
            client.remove(HttpHeaderNames.AUTHORIZATION);
        }
        return client;
    }
}
