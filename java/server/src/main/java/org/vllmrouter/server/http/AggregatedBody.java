package org.vllmrouter.server.http;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.ByteBufUtil;
import java.io.InputStream;
import org.vllmrouter.core.session.BodySource;

/**
 * An aggregated request body as a source for Jackson's streaming parser. A body in direct or composite buffers
 * (what the aggregator builds) is copied once into an array when it is small: Jackson's array parser is much
 * cheaper than its stream parser, and the copy serves every pass over the body. Large bodies are streamed instead.
 */
public final class AggregatedBody {
    /** Bodies up to this size are parsed from an array copy. */
    private static final int COPIED_BODY_LIMIT = 256 * 1024;

    private AggregatedBody() {}

    /** A source reading {@code body}'s readable bytes; it does not take ownership and leaves the indexes alone. */
    public static BodySource source(ByteBuf body) {
        if (body.hasArray()) {
            return BodySource.of(body.array(), body.arrayOffset() + body.readerIndex(), body.readableBytes());
        }
        if (body.readableBytes() <= COPIED_BODY_LIMIT) {
            byte[] copy = ByteBufUtil.getBytes(body);
            return BodySource.of(copy, 0, copy.length);
        }
        return factory -> factory.createParser((InputStream) new ByteBufInputStream(body.duplicate()));
    }
}
