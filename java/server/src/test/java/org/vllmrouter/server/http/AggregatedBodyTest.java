package org.vllmrouter.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class AggregatedBodyTest {

    /** The value of the top-level "prompt" field, read through a source of {@code body}. */
    private static String prompt(ByteBuf body) throws IOException {
        try (JsonParser parser = AggregatedBody.source(body).open(Json.FACTORY)) {
            while (parser.nextToken() != null) {
                if (parser.currentToken() == JsonToken.FIELD_NAME && parser.currentName().equals("prompt")) {
                    parser.nextToken();
                    return parser.getText();
                }
            }
            return null;
        }
    }

    private static ByteBuf directBody(String prompt) {
        byte[] json = ("{\"model\":\"m\",\"prompt\":\"" + prompt + "\"}").getBytes(StandardCharsets.UTF_8);
        // Two direct components, as the aggregator builds them from network reads.
        CompositeByteBuf body = Unpooled.compositeBuffer();
        int half = json.length / 2;
        body.addComponent(true, Unpooled.directBuffer(half).writeBytes(json, 0, half));
        body.addComponent(true, Unpooled.directBuffer(json.length - half).writeBytes(json, half, json.length - half));
        return body;
    }

    @Test
    void bodiesReadOneAfterAnotherOnOneThreadEachReadTheirOwnBytes() throws IOException {
        // Sizes below, at and above what a thread keeps for its copies, and above the copy limit (streamed).
        for (int size : new int[] {10, 5000, 3, 70_000, 40_000, 300_000, 1_100_000, 7}) {
            String text = Character.toString('a' + size % 26).repeat(size);
            ByteBuf body = directBody(text);
            try {
                assertEquals(text, prompt(body), "body with a prompt of " + size + " characters");
                assertEquals(0, body.readerIndex(), "the source leaves the reader index alone");
            } finally {
                body.release();
            }
        }
    }

    @Test
    void aShorterBodyAfterALongerOneIsNotReadPastItsEnd() {
        ByteBuf longer = directBody("x".repeat(3000));
        ByteBuf shorter = Unpooled.directBuffer().writeBytes("{\"a\":1}".getBytes(StandardCharsets.UTF_8));
        try {
            assertEquals(null, JsonBodyCheck.problem(longer, true));
            assertEquals(null, JsonBodyCheck.problem(shorter, true));
        } finally {
            longer.release();
            shorter.release();
        }
    }
}
