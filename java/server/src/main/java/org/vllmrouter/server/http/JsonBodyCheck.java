package org.vllmrouter.server.http;

import io.netty.buffer.ByteBuf;
import org.vllmrouter.core.session.JsonBodyScan;

/** Checks that an aggregated body is one well-formed JSON document, reading it in place ({@link JsonBodyScan}). */
public final class JsonBodyCheck {
    private JsonBodyCheck() {}

    /** Null when the body is acceptable (an object where {@code requireObject}), else the 400 message. */
    public static String problem(ByteBuf body, boolean requireObject) {
        return JsonBodyScan.check(AggregatedBody.source(body), requireObject, null);
    }
}
