package org.vllmrouter.server.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import io.netty.util.ReferenceCountUtil;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How a worker's answer is cut into the parts the proxy relays. */
class WorkerCodecTest {
    private static final int BODY = 100 * 1024;

    /** One part per read, not one per 8 KiB: a long answer travels the client's pipeline once per read. */
    @Test
    void anAnswerWithALengthThatArrivesInOneReadComesOutAsOnePart() {
        EmbeddedChannel channel = new EmbeddedChannel(HttpCodecs.client());
        byte[] body = body();
        ByteBuf read = Unpooled.buffer();
        read.writeCharSequence("HTTP/1.1 200 OK\r\nContent-Length: " + BODY + "\r\n\r\n", StandardCharsets.US_ASCII);
        read.writeBytes(body);
        channel.writeInbound(read);

        assertInstanceOf(HttpResponse.class, channel.readInbound());
        LastHttpContent part = assertInstanceOf(LastHttpContent.class, channel.readInbound());
        assertArrayEquals(body, ByteBufUtil.getBytes(part.content()));
        part.release();
        assertNull(channel.readInbound());
        channel.finishAndReleaseAll();
    }

    /**
     * A chunk larger than what has arrived is relayed as far as it has arrived, not held until it is whole: a
     * streaming worker's events reach the client as they come, whatever chunk sizes it announces.
     */
    @Test
    void aChunkIsRelayedAsFarAsItHasArrived() {
        EmbeddedChannel channel = new EmbeddedChannel(HttpCodecs.client());
        byte[] body = body();
        ByteBuf head = Unpooled.copiedBuffer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                + Integer.toHexString(BODY) + "\r\n", StandardCharsets.US_ASCII);
        channel.writeInbound(head, Unpooled.wrappedBuffer(body, 0, 1000));
        assertInstanceOf(HttpResponse.class, channel.readInbound());
        HttpContent first = channel.readInbound();
        assertEquals(1000, first.content().readableBytes());
        first.release();

        channel.writeInbound(Unpooled.wrappedBuffer(body, 1000, BODY - 1000),
                Unpooled.copiedBuffer("\r\n0\r\n\r\n", StandardCharsets.US_ASCII));
        HttpContent rest = channel.readInbound();
        assertArrayEquals(Arrays.copyOfRange(body, 1000, BODY), ByteBufUtil.getBytes(rest.content()));
        rest.release();
        LastHttpContent end = assertInstanceOf(LastHttpContent.class, channel.readInbound());
        assertEquals(0, end.content().readableBytes());
        end.release();
        assertNull(channel.readInbound());
        channel.finishAndReleaseAll();
    }

    /** The names of a connection's second answer are the first answer's, with their case as sent. */
    @Test
    void laterAnswersShareTheConnectionsHeaderNames() {
        EmbeddedChannel channel = new EmbeddedChannel(HttpCodecs.client());
        HttpResponse first = answer(channel, "HTTP/1.1 200 OK\r\nX-Served-By: w1\r\nContent-Length: 0\r\n\r\n");
        HttpResponse second = answer(channel, "HTTP/1.1 200 OK\r\nX-Served-By: w2\r\nContent-Length: 0\r\n\r\n");
        assertEquals("w2", second.headers().get("x-served-by"));
        assertSame(name(first, "X-Served-By"), name(second, "X-Served-By"));
        channel.finishAndReleaseAll();
    }

    /**
     * The status lines of a connection's answers each come out as sent, whether a word repeats the answer before
     * (which the decoder reuses) or not; a status code that is not a number after valid answers fails its answer.
     */
    @Test
    void eachAnswersStatusLineComesOutAsSent() {
        EmbeddedChannel channel = new EmbeddedChannel(HttpCodecs.client());
        String[][] lines = {
                {"HTTP/1.1 200 OK", "HTTP/1.1", "200", "OK"},
                {"HTTP/1.1 200 OK", "HTTP/1.1", "200", "OK"},
                {"HTTP/1.1 404 Not Found", "HTTP/1.1", "404", "Not Found"},
                {"HTTP/1.0 200 Fine", "HTTP/1.0", "200", "Fine"},
                {"HTTP/1.1 201 OK", "HTTP/1.1", "201", "OK"},
                {"HTTP/1.1 200 ", "HTTP/1.1", "200", ""},
                {"HTTP/1.1 200 OK", "HTTP/1.1", "200", "OK"},
        };
        for (String[] line : lines) {
            HttpResponse answer = answer(channel, line[0] + "\r\nContent-Length: 0\r\n\r\n");
            assertTrue(answer.decoderResult().isSuccess(), line[0]);
            assertEquals(line[1], answer.protocolVersion().text(), line[0]);
            assertEquals(Integer.parseInt(line[2]), answer.status().code(), line[0]);
            assertEquals(line[3], answer.status().reasonPhrase(), line[0]);
        }
        HttpResponse bad = answer(channel, "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n");
        assertTrue(bad.decoderResult().isFailure());
        channel.finishAndReleaseAll();
    }

    /**
     * A name outside HTTP's token rule fails the answer whether it is new or follows valid answers on the same
     * connection, and a later connection that sends it fails as well: it never becomes a name that skips the check.
     */
    @Test
    void aHeaderNameOutsideTheTokenRuleFailsTheAnswer() {
        for (String before : new String[] {"", "HTTP/1.1 200 OK\r\nX-Ok: 1\r\nContent-Length: 0\r\n\r\n"}) {
            for (int attempt = 0; attempt < 2; attempt++) {
                EmbeddedChannel channel = new EmbeddedChannel(HttpCodecs.client());
                if (!before.isEmpty()) {
                    assertTrue(answer(channel, before).decoderResult().isSuccess());
                }
                HttpResponse bad = answer(channel, "HTTP/1.1 200 OK\r\nBad{Name: 1\r\nContent-Length: 0\r\n\r\n");
                assertTrue(bad.decoderResult().isFailure(), "attempt " + attempt + " after '" + before + "'");
                channel.finishAndReleaseAll();
            }
        }
    }

    /** Decodes one whole answer; its head, with the parts after it released. */
    private static HttpResponse answer(EmbeddedChannel channel, String bytes) {
        channel.writeInbound(Unpooled.copiedBuffer(bytes, StandardCharsets.US_ASCII));
        HttpResponse head = assertInstanceOf(HttpResponse.class, channel.readInbound());
        for (Object part; (part = channel.readInbound()) != null; ) {
            ReferenceCountUtil.release(part);
        }
        return head;
    }

    /** The header name object the decoder put in {@code response}'s headers for {@code name}. */
    private static CharSequence name(HttpResponse response, String name) {
        Iterator<Map.Entry<CharSequence, CharSequence>> entries = response.headers().iteratorCharSequence();
        while (entries.hasNext()) {
            CharSequence key = entries.next().getKey();
            if (key.toString().equals(name)) {
                return key;
            }
        }
        throw new AssertionError("no header " + name);
    }

    private static byte[] body() {
        byte[] body = new byte[BODY];
        for (int i = 0; i < BODY; i++) {
            body[i] = (byte) ('a' + i % 26);
        }
        return body;
    }
}
