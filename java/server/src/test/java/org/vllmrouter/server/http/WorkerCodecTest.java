package org.vllmrouter.server.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
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

    private static byte[] body() {
        byte[] body = new byte[BODY];
        for (int i = 0; i < BODY; i++) {
            body[i] = (byte) ('a' + i % 26);
        }
        return body;
    }
}
