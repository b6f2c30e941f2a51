package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The mock's tokenizer: a token is a chunk of up to 3 UTF-8 bytes, and its id packs the chunk
 * length and bytes ({@code len << 24 | bytes}). Stateless, deterministic across processes, and
 * exactly reversible, so {@code /tokenize} then {@code /detokenize} round-trips. Chunks are
 * counted from the start of the text, so a prompt that extends another one starts with the same
 * tokens, which is what the prefix-cache model needs.
 *
 * <p>The generated text "ok ok ok" is exactly one token per "ok".
 */
final class MockTokenizer {

    private static final int CHUNK = 3;

    /** One more than the largest id {@link #encode} can produce. */
    static final int VOCAB_SIZE = ((CHUNK << 24) | 0xFFFFFF) + 1;

    private MockTokenizer() {}

    static int[] encode(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[(b.length + CHUNK - 1) / CHUNK];
        for (int t = 0; t < ids.length; t++) {
            int from = t * CHUNK;
            int len = Math.min(CHUNK, b.length - from);
            int packed = 0;
            for (int i = 0; i < len; i++) {
                packed = (packed << 8) | (b[from + i] & 0xFF);
            }
            ids[t] = (len << 24) | packed;
        }
        return ids;
    }

    /** Ids this tokenizer did not make decode to nothing rather than failing. */
    static String decode(int[] ids) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(ids.length * CHUNK);
        for (int id : ids) {
            int len = id >>> 24;
            if (len < 1 || len > CHUNK) {
                continue;
            }
            for (int i = len - 1; i >= 0; i--) {
                out.write((id >>> (8 * i)) & 0xFF);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** The generated completion for {@code n} output tokens: "ok ok ... ok". */
    static String completionText(int n) {
        return n <= 0 ? "" : "ok" + " ok".repeat(n - 1);
    }

    /**
     * Renders chat messages as one prompt, a stand-in for a chat template: each message becomes
     * {@code <|role|>content\n}, followed by {@code <|assistant|>}. A conversation that grows by
     * appending messages therefore renders to a text that extends the previous one.
     *
     * @throws BadRequestException if {@code messages} is not a list of objects
     */
    static String renderChat(JsonNode messages) {
        if (messages == null || !messages.isArray()) {
            throw new BadRequestException("'messages' must be a list");
        }
        StringBuilder sb = new StringBuilder();
        for (JsonNode m : messages) {
            if (!m.isObject()) {
                throw new BadRequestException("each message must be an object");
            }
            sb.append("<|").append(m.path("role").asText("user")).append("|>");
            JsonNode content = m.get("content");
            if (content != null && content.isTextual()) {
                sb.append(content.asText());
            } else if (content != null && content.isArray()) {
                for (JsonNode part : content) {
                    sb.append(part.path("text").asText(""));
                }
            }
            sb.append('\n');
        }
        return sb.append("<|assistant|>").toString();
    }
}
