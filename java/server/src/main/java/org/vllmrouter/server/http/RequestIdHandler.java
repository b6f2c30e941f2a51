package org.vllmrouter.server.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.util.AsciiString;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Gives every request an id (from the first configured request header present, else generated as upstream does)
 * and sets it as {@code x-request-id} on its response, including responses written by handlers further in
 * (413 from the aggregator, CORS preflights). Ids queue in request order so pipelined requests keep theirs.
 */
public final class RequestIdHandler extends ChannelDuplexHandler {
    public static final AsciiString X_REQUEST_ID = AsciiString.cached("x-request-id");
    private static final List<String> DEFAULT_HEADERS = List.of("x-request-id", "x-correlation-id", "x-trace-id", "request-id");
    private static final char[] ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".toCharArray();

    private final List<String> sourceHeaders;
    private final ArrayDeque<String> pending = new ArrayDeque<>(2);

    public RequestIdHandler(List<String> sourceHeaders) {
        this.sourceHeaders = sourceHeaders == null || sourceHeaders.isEmpty()
                ? DEFAULT_HEADERS
                : sourceHeaders.stream().map(h -> h.toLowerCase(Locale.ROOT)).toList();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof HttpRequest request) {
            pending.addLast(idFor(request));
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof HttpResponse response && response.status().codeClass() != io.netty.handler.codec.http.HttpStatusClass.INFORMATIONAL) {
            String id = pending.pollFirst();
            if (id != null) {
                response.headers().set(X_REQUEST_ID, id);
            }
        }
        ctx.write(msg, promise);
    }

    private String idFor(HttpRequest request) {
        for (String name : sourceHeaders) {
            String value = request.headers().get(name);
            if (value != null && !value.isEmpty()) {
                return value;
            }
        }
        return generate(request.uri());
    }

    static String generate(String uri) {
        String prefix = uri.contains("/chat/completions") ? "chatcmpl-"
                : uri.contains("/completions") ? "cmpl-"
                : uri.contains("/generate") ? "gnt-"
                : "req-";
        ThreadLocalRandom random = ThreadLocalRandom.current();
        int end = prefix.length() + 24;
        StringBuilder id = new StringBuilder(end).append(prefix);
        // Six random bits a character, ten from each long; the two values past the alphabet are skipped, so every
        // character stays uniform over the 62.
        while (id.length() < end) {
            long bits = random.nextLong();
            for (int k = 0; k < 10 && id.length() < end; k++, bits >>>= 6) {
                int v = (int) (bits & 63);
                if (v < ALPHABET.length) {
                    id.append(ALPHABET[v]);
                }
            }
        }
        return id.toString();
    }
}
