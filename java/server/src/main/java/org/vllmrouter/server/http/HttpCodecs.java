package org.vllmrouter.server.http;

import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.handler.codec.http.HttpServerCodec;

/**
 * The HTTP codecs of the proxy path, Netty's own with one change: the trailer set of every decoded message starts
 * small. The decoder gives each message's last part a trailer set, although a body with a length (nearly every
 * request and answer the router sees) has none; at the default size those sets were a twentieth of the proxy path's
 * allocation. A chunked message's trailers still go in, with the usual validation.
 */
public final class HttpCodecs {
    private static final HttpHeadersFactory SMALL_TRAILERS = new HttpHeadersFactory() {
        @Override
        public HttpHeaders newHeaders() {
            return DefaultHttpHeadersFactory.trailersFactory().newEmptyHeaders();
        }

        @Override
        public HttpHeaders newEmptyHeaders() {
            return DefaultHttpHeadersFactory.trailersFactory().newEmptyHeaders();
        }
    };

    private HttpCodecs() {}

    public static HttpServerCodec server(int maxInitialLine, int maxHeaderSize, int maxChunkSize) {
        return new HttpServerCodec(new HttpDecoderConfig()
                .setMaxInitialLineLength(maxInitialLine)
                .setMaxHeaderSize(maxHeaderSize)
                .setMaxChunkSize(maxChunkSize)
                .setTrailersFactory(SMALL_TRAILERS));
    }

    /** Netty's defaults otherwise, as {@code new HttpClientCodec()}. */
    public static HttpClientCodec client() {
        return new HttpClientCodec(new HttpDecoderConfig().setTrailersFactory(SMALL_TRAILERS), false, false);
    }
}
