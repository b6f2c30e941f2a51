package org.vllmrouter.server.http;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.util.concurrent.FastThreadLocal;
import java.io.InputStream;
import org.vllmrouter.core.session.BodySource;

/**
 * An aggregated request body as a source for Jackson's streaming parser. A body in direct or composite buffers
 * (what the aggregator builds) is copied once into an array when it is small: Jackson's array parser is much
 * cheaper than its stream parser, and the copy serves every pass over the body. Large bodies are streamed instead.
 *
 * <p>The copy goes into an array each thread keeps (an event loop parses one body at a time, start to end), so a
 * request allocates nothing for it: at tens of thousands of requests a second a fresh copy per request was the
 * largest single share of the router's allocation, and so of its young collections.
 */
public final class AggregatedBody {
    /**
     * Bodies up to this size are parsed from an array copy, where the token ids of a long context are skipped fast
     * ({@link org.vllmrouter.core.session.FastSkipJsonFactory}; 1 MiB is about 150,000 ids), which the stream parser
     * does not do (docs/perf/cpu-per-request.md); a larger body is streamed, so that no copy comes near the size of
     * the young generation.
     */
    private static final int COPIED_BODY_LIMIT = 1024 * 1024;
    /** The largest copy array a thread keeps between requests; larger copies are allocated for their request. */
    private static final int KEPT_COPY_LIMIT = 64 * 1024;
    private static final FastThreadLocal<byte[]> COPY = new FastThreadLocal<>() {
        @Override
        protected byte[] initialValue() {
            return new byte[4096];
        }
    };

    private AggregatedBody() {}

    /**
     * A source reading {@code body}'s readable bytes; it does not take ownership and leaves the indexes alone. It
     * is valid until the next call on the same thread: read it, then let it go.
     */
    public static BodySource source(ByteBuf body) {
        if (body.hasArray()) {
            return BodySource.of(body.array(), body.arrayOffset() + body.readerIndex(), body.readableBytes());
        }
        int length = body.readableBytes();
        if (length <= COPIED_BODY_LIMIT) {
            byte[] copy = copyArray(length);
            body.getBytes(body.readerIndex(), copy, 0, length);
            return BodySource.of(copy, 0, length);
        }
        return factory -> factory.createParser((InputStream) new ByteBufInputStream(body.duplicate()));
    }

    private static byte[] copyArray(int length) {
        byte[] kept = COPY.get();
        if (length <= kept.length) {
            return kept;
        }
        if (length > KEPT_COPY_LIMIT) {
            return new byte[length];
        }
        byte[] grown = new byte[Math.min(KEPT_COPY_LIMIT, Math.max(length, kept.length * 2))];
        COPY.set(grown);
        return grown;
    }
}
