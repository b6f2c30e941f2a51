package org.vllmrouter.server.http;

import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.handler.codec.http.HttpServerCodec;

/**
 * The HTTP codecs of the proxy path, Netty's own with two changes here (and, for worker connections, the header
 * names of {@link WorkerCodec}).
 *
 * <p>The trailer set of every decoded message is made only when a trailer arrives ({@link DeferredTrailers}). The
 * decoder gives each message's last part a trailer set, although a body with a length (nearly every request and
 * answer the router sees) has none. A chunked message's trailers still go in, with the usual validation.
 *
 * <p>A request whose Content-Length fields disagree is a decoder failure (a 400, see {@link RequestGuard}) in every
 * HTTP version. Netty refuses repeated lengths in HTTP/1.1 but, in HTTP/1.0, takes the first and drops the others,
 * where RFC 9112 section 6.3 requires the message be refused: a proxy in front of the router that took another of
 * the values would frame the stream differently. Identical repeated lengths still fold into one in HTTP/1.0.
 */
public final class HttpCodecs {
    private static final HttpHeadersFactory DEFERRED_TRAILERS = new HttpHeadersFactory() {
        @Override
        public HttpHeaders newHeaders() {
            return new DeferredTrailers();
        }

        @Override
        public HttpHeaders newEmptyHeaders() {
            return new DeferredTrailers();
        }
    };

    private static final HttpHeadersFactory REQUEST_HEADERS = new HttpHeadersFactory() {
        @Override
        public HttpHeaders newHeaders() {
            return new RequestHeaders();
        }

        @Override
        public HttpHeaders newEmptyHeaders() {
            return DefaultHttpHeadersFactory.headersFactory().newEmptyHeaders();
        }
    };

    /** A decoded request's headers: Netty's, refusing a Content-Length that disagrees with one already there. */
    private static final class RequestHeaders extends DefaultHttpHeaders {
        RequestHeaders() {
            super(DefaultHttpHeadersFactory.headersFactory().getNameValidator(),
                    DefaultHttpHeadersFactory.headersFactory().getValueValidator());
        }

        @Override
        public HttpHeaders add(CharSequence name, Object value) {
            if (HttpHeaderNames.CONTENT_LENGTH.contentEqualsIgnoreCase(name)) {
                String present = get(HttpHeaderNames.CONTENT_LENGTH);
                if (present != null && !present.trim().equals(value.toString().trim())) {
                    throw new IllegalArgumentException(
                            "Multiple Content-Length values found: [" + present + ", " + value + "]");
                }
            }
            return super.add(name, value);
        }
    }

    private HttpCodecs() {}

    /**
     * An empty header set of the class a decoded request's headers have, for requests the router makes itself: the
     * encoder to workers then sees one header class, so control calls do not undo the JIT's view of the proxy path.
     */
    public static HttpHeaders requestHeaders() {
        return new RequestHeaders();
    }

    public static HttpServerCodec server(int maxInitialLine, int maxHeaderSize, int maxChunkSize) {
        return new HttpServerCodec(new HttpDecoderConfig()
                .setMaxInitialLineLength(maxInitialLine)
                .setMaxHeaderSize(maxHeaderSize)
                .setMaxChunkSize(maxChunkSize)
                .setHeadersFactory(REQUEST_HEADERS)
                .setTrailersFactory(DEFERRED_TRAILERS));
    }

    /**
     * The codec of a connection to a worker ({@link WorkerCodec}), with Netty's limits on the head. A body part is
     * whatever one read brought, not cut at Netty's 8 KiB: each part is a slice of the read buffer (nothing is
     * copied or held back, partial chunks included), and each travels the client's pipeline and encoder once, so a
     * long answer relayed in 8 KiB parts cost a trip per 8 KiB.
     */
    public static WorkerCodec client() {
        return new WorkerCodec(new HttpDecoderConfig()
                .setMaxChunkSize(Integer.MAX_VALUE)
                .setAllowPartialChunks(true)
                .setTrailersFactory(DEFERRED_TRAILERS));
    }
}
