package org.vllmrouter.server.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
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
    private static final List<AsciiString> DEFAULT_HEADERS = List.of(X_REQUEST_ID, AsciiString.cached("x-correlation-id"),
            AsciiString.cached("x-trace-id"), AsciiString.cached("request-id"));
    private static final byte[] ALPHABET =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".getBytes(StandardCharsets.US_ASCII);
    private static final int RANDOM_CHARS = 24;
    private static final byte[] CHAT_PREFIX = "chatcmpl-".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] COMPLETION_PREFIX = "cmpl-".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] GENERATE_PREFIX = "gnt-".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] OTHER_PREFIX = "req-".getBytes(StandardCharsets.US_ASCII);

    // AsciiString names keep their hash, so looking them up in every request's headers does not hash them again.
    private final List<AsciiString> sourceHeaders;
    private final ArrayDeque<CharSequence> pending = new ArrayDeque<>(2);

    public RequestIdHandler(List<String> sourceHeaders) {
        this.sourceHeaders = sourceHeaders == null || sourceHeaders.isEmpty()
                ? DEFAULT_HEADERS
                : sourceHeaders.stream().map(h -> AsciiString.of(h.toLowerCase(Locale.ROOT))).toList();
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
            CharSequence id = pending.pollFirst();
            if (id != null) {
                response.headers().set(X_REQUEST_ID, id);
            }
        }
        ctx.write(msg, promise);
    }

    private CharSequence idFor(HttpRequest request) {
        for (AsciiString name : sourceHeaders) {
            String value = request.headers().get(name);
            if (value != null && !value.isEmpty()) {
                return value;
            }
        }
        return generate(request.uri());
    }

    /** An id as upstream makes one: a prefix by the kind of request, then 24 random letters and digits. */
    static AsciiString generate(String uri) {
        byte[] prefix = uri.contains("/chat/completions") ? CHAT_PREFIX
                : uri.contains("/completions") ? COMPLETION_PREFIX
                : uri.contains("/generate") ? GENERATE_PREFIX
                : OTHER_PREFIX;
        ThreadLocalRandom random = ThreadLocalRandom.current();
        byte[] id = Arrays.copyOf(prefix, prefix.length + RANDOM_CHARS);
        int next = prefix.length;
        // Six random bits a character, ten from each long; the two values past the alphabet are skipped, so every
        // character stays uniform over the 62.
        while (next < id.length) {
            long bits = random.nextLong();
            for (int k = 0; k < 10 && next < id.length; k++, bits >>>= 6) {
                int v = (int) (bits & 63);
                if (v < ALPHABET.length) {
                    id[next++] = ALPHABET[v];
                }
            }
        }
        // Written as bytes by the encoder, without a String's per-character copy.
        return new AsciiString(id, false);
    }
}
