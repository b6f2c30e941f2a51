package org.vllmrouter.server.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.CombinedChannelDuplexHandler;
import io.netty.handler.codec.DefaultHeaders;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestEncoder;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;

/**
 * The codec of a connection to a worker: Netty's request encoder and response decoder, paired the way Netty's
 * {@code HttpClientCodec} pairs them (an answer to HEAD has no body, whatever its headers say), with one change:
 * a response's header names come from a small cache of the names this connection has already seen.
 *
 * <p>A worker sends the same few header names on every answer (date, server, content-type, content-length), and
 * Netty's response decoder makes a new name, two objects and a hash, for each of them on every response: about a
 * twentieth of the proxy path's allocation. Its request decoder already shares the common names; the response
 * decoder has no such list, so this one learns the names from the connection instead, with their case as sent.
 * A name is checked against HTTP's token rule once, when it enters the cache, rather than on every answer. The
 * status line's three words (version, code, reason: "HTTP/1.1", "200", "OK" on nearly every answer) are likewise
 * the last answer's strings when the next one repeats them, where the decoder made three new ones per answer.
 *
 * <p>Unlike {@code HttpClientCodec}, a CONNECT answer gets no tunnel: the router never forwards a CONNECT of
 * authority form, so an answer to one is read by its own framing like any other.
 */
public final class WorkerCodec
        extends CombinedChannelDuplexHandler<WorkerCodec.ResponseDecoder, WorkerCodec.RequestEncoder> {
    /** The methods of the requests sent and not yet answered, oldest first. */
    private final ArrayDeque<HttpMethod> unanswered = new ArrayDeque<>(2);

    WorkerCodec(HttpDecoderConfig config) {
        CheckedNames checked = new CheckedNames();
        config.setHeadersFactory(DefaultHttpHeadersFactory.headersFactory().withNameValidator(checked));
        init(new ResponseDecoder(config, checked), new RequestEncoder());
    }

    /**
     * The response headers' name check: Netty's, except for the name the decoder has just taken from its cache,
     * which passed that check when it was cached. The decoder adds each name right after splitting it, on this
     * connection's event loop, so the name split last is the one being added.
     */
    private static final class CheckedNames implements DefaultHeaders.NameValidator<CharSequence> {
        private static final DefaultHeaders.NameValidator<CharSequence> NETTY =
                DefaultHttpHeadersFactory.headersFactory().getNameValidator();
        private AsciiString splitFromCache;

        @Override
        public void validateName(CharSequence name) {
            if (name != splitFromCache) {
                NETTY.validateName(name);
            }
        }
    }

    final class RequestEncoder extends HttpRequestEncoder {
        @Override
        protected void encode(ChannelHandlerContext ctx, Object msg, List<Object> out) throws Exception {
            if (msg instanceof HttpRequest request) {
                unanswered.addLast(request.method());
            }
            super.encode(ctx, msg, out);
        }
    }

    final class ResponseDecoder extends HttpResponseDecoder {
        private static final int CACHED_NAMES = 16;
        /** Header names by a hash of their bytes; a collision replaces the older name. */
        private final AsciiString[] names = new AsciiString[CACHED_NAMES];
        /** The status line's words of the last answer (version, code, reason), reused while the next one repeats them. */
        private final String[] statusWords = new String[3];
        private final CheckedNames checked;

        ResponseDecoder(HttpDecoderConfig config, CheckedNames checked) {
            super(config);
            this.checked = checked;
        }

        @Override
        protected boolean isContentAlwaysEmpty(HttpMessage msg) {
            // An informational answer comes before the final one to the same request, which stays unanswered.
            if (((HttpResponse) msg).status().codeClass() != HttpStatusClass.INFORMATIONAL
                    && HttpMethod.HEAD.equals(unanswered.pollFirst())) {
                return true;
            }
            return super.isContentAlwaysEmpty(msg);
        }

        @Override
        protected String splitFirstWordInitialLine(byte[] line, int start, int length) {
            return statusWord(0, line, start, length);
        }

        @Override
        protected String splitSecondWordInitialLine(byte[] line, int start, int length) {
            return statusWord(1, line, start, length);
        }

        @Override
        protected String splitThirdWordInitialLine(byte[] line, int start, int length) {
            return statusWord(2, line, start, length);
        }

        /**
         * The word at {@code start}: the last answer's word at {@code position} when the bytes spell it again, else a
         * new string of them, one char a byte as Netty's decoder makes it, kept for the next answer.
         */
        private String statusWord(int position, byte[] line, int start, int length) {
            String last = statusWords[position];
            if (last != null && last.length() == length) {
                int i = 0;
                while (i < length && last.charAt(i) == (line[start + i] & 0xff)) {
                    i++;
                }
                if (i == length) {
                    return last;
                }
            }
            String word = new String(line, start, length, StandardCharsets.ISO_8859_1);
            statusWords[position] = word;
            return word;
        }

        @Override
        protected AsciiString splitHeaderName(byte[] line, int start, int length) {
            int hash = 0;
            for (int i = start, end = start + length; i < end; i++) {
                hash = 31 * hash + line[i];
            }
            int slot = (hash ^ (hash >>> 16)) & (CACHED_NAMES - 1);
            AsciiString cached = names[slot];
            if (cached != null && cached.length() == length && Arrays.equals(cached.array(), cached.arrayOffset(),
                    cached.arrayOffset() + length, line, start, start + length)) {
                checked.splitFromCache = cached;
                return cached;
            }
            AsciiString name = super.splitHeaderName(line, start, length);
            // Checked here, before it is cached: an invalid name fails this answer as it always did, and never
            // reaches the cache.
            CheckedNames.NETTY.validateName(name);
            checked.splitFromCache = name;
            names[slot] = name;
            return name;
        }
    }
}
