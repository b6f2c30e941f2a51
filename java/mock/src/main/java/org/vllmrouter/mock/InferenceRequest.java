package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * What a generation route asked for, read from its JSON body: the prompts as token ids, how
 * many tokens to generate, and the options that change the answer's shape.
 */
record InferenceRequest(Kind kind, List<int[]> prompts, int outputTokens, int n, boolean stream,
                        boolean includeUsage, boolean prefillForRemoteDecode, String model) {

    /** Upper bound on generated tokens per choice, so a silly max_tokens cannot exhaust memory. */
    static final int MAX_OUTPUT_TOKENS = 16_384;

    enum Kind { COMPLETIONS, CHAT, GENERATE, INFERENCE_GENERATE, RESPONSES }

    static InferenceRequest parse(Kind kind, JsonNode body, String defaultModel) {
        String model = body.path("model").isTextual() ? body.get("model").asText() : defaultModel;
        JsonNode sp = body.path("sampling_params");
        List<int[]> prompts;
        int out;
        int n = 1;
        switch (kind) {
            case COMPLETIONS -> {
                prompts = promptList(require(body, "prompt"), "prompt");
                out = tokenCount(body, "max_tokens");
                n = intField(body, "n", 1);
            }
            case CHAT -> {
                prompts = List.of(MockTokenizer.encode(MockTokenizer.renderChat(require(body, "messages"))));
                out = body.has("max_completion_tokens") && !body.get("max_completion_tokens").isNull()
                        ? tokenCount(body, "max_completion_tokens") : tokenCount(body, "max_tokens");
                n = intField(body, "n", 1);
            }
            case GENERATE -> {
                if (body.hasNonNull("input_ids")) {
                    prompts = promptList(body.get("input_ids"), "input_ids");
                } else {
                    prompts = promptList(require(body, "text"), "text");
                }
                out = tokenCount(sp, "max_new_tokens");
            }
            case INFERENCE_GENERATE -> {
                JsonNode ids = require(body, "token_ids");
                if (!ids.isArray() || !allInts(ids)) {
                    throw new BadRequestException("'token_ids' must be a list of integers");
                }
                prompts = List.of(ints(ids));
                out = tokenCount(sp, "max_tokens");
                n = intField(sp, "n", 1);
            }
            case RESPONSES -> {
                JsonNode input = require(body, "input");
                String text = input.isTextual() ? input.asText() : MockTokenizer.renderChat(input);
                prompts = List.of(MockTokenizer.encode(text));
                out = tokenCount(body, "max_output_tokens");
            }
            default -> throw new IllegalStateException(kind.name());
        }
        if (n < 1 || n > 128) {
            throw new BadRequestException("'n' must be in 1..128, got " + n);
        }
        boolean stream = body.path("stream").asBoolean(false);
        boolean includeUsage = body.path("stream_options").path("include_usage").asBoolean(false);
        boolean prefill = body.path("kv_transfer_params").path("do_remote_decode").asBoolean(false);
        return new InferenceRequest(kind, prompts, out, n, stream, includeUsage, prefill, model);
    }

    static JsonNode require(JsonNode body, String field) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) {
            throw new BadRequestException("missing required field '" + field + "'");
        }
        return v;
    }

    /**
     * A prompt field in OpenAI form: a string, a list of token ids, or a batch (list of strings
     * or of token-id lists).
     */
    static List<int[]> promptList(JsonNode p, String field) {
        if (p.isTextual()) {
            return List.of(MockTokenizer.encode(p.asText()));
        }
        if (!p.isArray() || p.isEmpty()) {
            throw new BadRequestException("'" + field + "' must be a string or a non-empty list");
        }
        if (allInts(p)) {
            return List.of(ints(p));
        }
        List<int[]> batch = new ArrayList<>(p.size());
        for (JsonNode e : p) {
            if (e.isTextual()) {
                batch.add(MockTokenizer.encode(e.asText()));
            } else if (e.isArray() && allInts(e)) {
                batch.add(ints(e));
            } else {
                throw new BadRequestException("'" + field + "' entries must be strings or lists of integers");
            }
        }
        return batch;
    }

    static boolean allInts(JsonNode array) {
        for (JsonNode e : array) {
            if (!e.canConvertToInt() || !e.isIntegralNumber()) {
                return false;
            }
        }
        return true;
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).intValue();
        }
        return out;
    }

    /** A max-tokens style field: absent or null means 1 token ("ok", as upstream's mock answers). */
    private static int tokenCount(JsonNode node, String field) {
        int v = intField(node, field, 1);
        if (v < 0) {
            throw new BadRequestException("'" + field + "' must be >= 0, got " + v);
        }
        return Math.min(v, MAX_OUTPUT_TOKENS);
    }

    private static int intField(JsonNode node, String field, int dflt) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new BadRequestException("'" + field + "' must be an integer");
        }
        return v.intValue();
    }
}
