package org.vllmrouter.server.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class UsageScannerTest {
    private static final String PLAIN = "{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"a \\\"usage\\\": {x}\"}],"
            + "\"usage\": {\"prompt_tokens\":512,\"completion_tokens\":8,\"total_tokens\":520,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":384}},\"kv_transfer_params\":null}";
    private static final String SSE = "data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"usage\"}}]}\n\n"
            + "data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":null}\n\n"
            + "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"total_tokens\":44,"
            + "\"completion_tokens\":4,\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n"
            + "data: [DONE]\n\n";

    @Test
    void findsUsageInAPlainAnswerWhereverItsPartsSplit() {
        for (int cut = 0; cut <= PLAIN.length(); cut++) {
            UsageScanner scanner = new UsageScanner();
            scanner.scan(bytes(PLAIN.substring(0, cut)));
            scanner.scan(bytes(PLAIN.substring(cut)));
            assertEquals(512, scanner.promptTokens(), "cut at " + cut);
            assertEquals(384, scanner.cachedTokens(), "cut at " + cut);
        }
    }

    @Test
    void findsTheFinalUsageChunkOfAStreamFedByteByByte() {
        UsageScanner scanner = new UsageScanner();
        for (int i = 0; i < SSE.length(); i++) {
            scanner.scan(bytes(SSE.substring(i, i + 1)));
        }
        assertEquals(40, scanner.promptTokens());
        assertEquals(32, scanner.cachedTokens());
    }

    @Test
    void theLastUsageObjectWinsWhenSeveralShareAPart() {
        String continuous = SSE.replace("\"usage\":null", "\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1,"
                + "\"prompt_tokens_details\":{\"cached_tokens\":16}}");
        UsageScanner scanner = new UsageScanner();
        scanner.scan(bytes(continuous + continuous.replace("32", "24")));
        assertEquals(40, scanner.promptTokens());
        assertEquals(24, scanner.cachedTokens());
    }

    @Test
    void reportsNothingWithoutUsage() {
        UsageScanner scanner = new UsageScanner();
        scanner.scan(bytes("{\"text\":\"the word \\\"usage\\\": {\\\"prompt_tokens\\\":1}\",\"usage\":null,"
                + "\"meta_info\":{\"prompt_tokens\":7,\"cached_tokens\":3}}"));
        assertEquals(-1, scanner.promptTokens());
        assertEquals(-1, scanner.cachedTokens());
    }

    @Test
    void aUsageWithoutDetailsReportsPromptTokensOnly() {
        UsageScanner scanner = new UsageScanner();
        scanner.scan(bytes("{\"usage\":{\"prompt_tokens\":9,\"nested\":{\"cached_tokens\":5},"
                + "\"prompt_tokens_details\":null}}"));
        assertEquals(9, scanner.promptTokens());
        assertEquals(-1, scanner.cachedTokens());
    }

    @Test
    void aMalformedUsageObjectReportsNothing() {
        UsageScanner scanner = new UsageScanner();
        scanner.scan(bytes("{\"usage\":{\"prompt_tokens\":9,]}, \"usage\":{\"prompt_tokens\":3}}"));
        assertEquals(-1, scanner.promptTokens());
        assertEquals(-1, scanner.cachedTokens());
    }

    @Test
    void scansOfOneLoopThatOverlapOrBreakOffDoNotDisturbEachOther() {
        int half = PLAIN.indexOf("completion_tokens");
        UsageScanner abandoned = new UsageScanner();
        abandoned.scan(bytes(PLAIN.substring(0, half)));
        UsageScanner overlapping = new UsageScanner();
        overlapping.scan(bytes(PLAIN));
        UsageScanner malformed = new UsageScanner();
        malformed.scan(bytes("{\"usage\":{\"prompt_tokens\":9,]}"));
        for (UsageScanner later : new UsageScanner[] {new UsageScanner(), new UsageScanner()}) {
            later.scan(bytes(PLAIN.replace("384", "100")));
            assertEquals(512, later.promptTokens());
            assertEquals(100, later.cachedTokens());
        }
        assertEquals(384, overlapping.cachedTokens());
        assertEquals(-1, abandoned.cachedTokens());
        assertEquals(-1, malformed.promptTokens());
    }

    @Test
    void findsTheKeyWhereverTwoOrThreePartsSplitIt() {
        int key = SSE.lastIndexOf("\"usage\"");
        for (int first = key - 2; first <= key + 10; first++) {
            for (int second = first; second <= key + 10; second++) {
                UsageScanner scanner = new UsageScanner();
                scanner.scan(bytes(SSE.substring(0, first)));
                scanner.scan(bytes(SSE.substring(first, second)));
                scanner.scan(bytes(SSE.substring(second)));
                assertEquals(40, scanner.promptTokens(), "cuts at " + first + ", " + second);
                assertEquals(32, scanner.cachedTokens(), "cuts at " + first + ", " + second);
            }
        }
    }

    @Test
    void aPartEndingInAKeyPrefixThatTheNextPartBreaksReportsNothing() {
        for (String prefix : new String[] {"\"", "\"u", "\"us", "\"usa", "\"usag", "\"usage", "\"usage\"",
                "\"usage\":"}) {
            UsageScanner scanner = new UsageScanner();
            scanner.scan(bytes("{\"text\":\"a\",\"x" + prefix));
            scanner.scan(bytes("z\":{\"prompt_tokens\":3},\"usager\":{\"prompt_tokens\":4}}"));
            assertEquals(-1, scanner.promptTokens(), "after " + prefix);
        }
    }

    @Test
    void aStreamWithoutUsageReportsNothing() {
        String chunk = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                + "\"delta\":{\"content\":\" usage: grep \\\"usage\\\"\"},\"logprobs\":null}]}\n\n";
        UsageScanner scanner = new UsageScanner();
        scanner.scan(bytes(chunk.repeat(50)));
        scanner.scan(bytes("data: [DONE]\n\n"));
        assertEquals(-1, scanner.promptTokens());
        assertEquals(-1, scanner.cachedTokens());
    }

    @Test
    void usageNullChunksBeforeTheFinalOneAreSkipped() {
        String nullChunk = "data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"g\"}}],\"usage\": null}\n\n";
        UsageScanner scanner = new UsageScanner();
        for (int i = 0; i < 20; i++) {
            scanner.scan(bytes(nullChunk));
        }
        assertEquals(-1, scanner.promptTokens());
        scanner.scan(bytes(SSE));
        assertEquals(40, scanner.promptTokens());
        assertEquals(32, scanner.cachedTokens());
    }

    @Test
    void leavesThePartUntouched() {
        ByteBuf part = bytes(PLAIN);
        new UsageScanner().scan(part);
        assertEquals(0, part.readerIndex());
        assertEquals(PLAIN, part.toString(StandardCharsets.UTF_8));
    }

    private static ByteBuf bytes(String text) {
        ByteBuf direct = Unpooled.directBuffer();
        direct.writeBytes(text.getBytes(StandardCharsets.UTF_8));
        return direct;
    }
}
