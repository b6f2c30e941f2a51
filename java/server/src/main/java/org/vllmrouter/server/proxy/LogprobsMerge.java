package org.vllmrouter.server.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Folds the prefill stage's logprobs into the decode answer of a non-streaming vLLM two-stage request. The rule,
 * as vLLM's PD proxies apply it: the <em>prompt side</em> comes from prefill (only the prefill worker ran the prompt
 * through the model; the decode worker received its KV cache and computed no prompt logprobs), the <em>generated
 * side</em> comes from decode (the decode worker generates every output token; the prefill's single sampled token
 * is thrown away, so its logprob is too).
 * <ul>
 * <li>{@code prompt_logprobs} at the top level (chat completions, {@code /inference/v1/generate}) and per choice
 *     (completions) is copied from prefill when prefill has it.</li>
 * <li>Completions {@code logprobs} ({@code tokens}, {@code token_logprobs}, {@code top_logprobs},
 *     {@code text_offset}, parallel arrays): prefill's prompt entries go in front of decode's entries. The prompt
 *     entries are the first {@code len(prompt_logprobs)} of prefill's arrays, or with {@code echo} and no
 *     {@code prompt_logprobs}, all but prefill's one generated entry; without either there are none. Decode's
 *     text offsets count from the start of its own text unless they already start past the prompt (vLLM starts
 *     them at the prompt's length when it echoes), so they are shifted by the prompt's length only when needed.</li>
 * <li>Chat {@code logprobs.content} is generated tokens only, so it stays as decode sent it.</li>
 * </ul>
 * Choices pair up by position: both stages ran the same request, so they have the same choices in the same order.
 */
public final class LogprobsMerge {
    private static final String[] PARALLEL_ARRAYS = {"tokens", "token_logprobs", "top_logprobs", "text_offset"};

    private LogprobsMerge() {}

    /** Whether the merge applies: logprobs asked for ({@code logprobs} present or {@code echo: true}), no streaming. */
    public static boolean requested(JsonNode request) {
        JsonNode logprobs = request.get("logprobs");
        boolean asked = (logprobs != null && !logprobs.isNull() && !(logprobs.isBoolean() && !logprobs.asBoolean()))
                || request.path("echo").asBoolean(false);
        return asked && !request.path("stream").asBoolean(false);
    }

    /** Writes the merge into {@code decode}. */
    public static void into(ObjectNode decode, JsonNode prefill, boolean echo) {
        copyPromptLogprobs(prefill, decode);
        JsonNode prefillChoices = prefill.path("choices");
        JsonNode decodeChoices = decode.path("choices");
        int pairs = Math.min(prefillChoices.size(), decodeChoices.size());
        for (int i = 0; i < pairs; i++) {
            if (prefillChoices.get(i) instanceof ObjectNode p && decodeChoices.get(i) instanceof ObjectNode d) {
                copyPromptLogprobs(p, d);
                if (p.get("logprobs") instanceof ObjectNode pl && d.get("logprobs") instanceof ObjectNode dl) {
                    prependPromptEntries(pl, dl, promptEntries(p, pl, echo));
                }
            }
        }
    }

    private static void copyPromptLogprobs(JsonNode from, ObjectNode to) {
        JsonNode prompt = from.get("prompt_logprobs");
        if (prompt != null && !prompt.isNull()) {
            to.set("prompt_logprobs", prompt);
        }
    }

    private static int promptEntries(JsonNode prefillChoice, ObjectNode prefillLogprobs, boolean echo) {
        JsonNode prompt = prefillChoice.get("prompt_logprobs");
        if (prompt != null && prompt.isArray()) {
            return prompt.size();
        }
        JsonNode tokens = prefillLogprobs.get("tokens");
        return echo && tokens != null && tokens.isArray() ? Math.max(0, tokens.size() - 1) : 0;
    }

    private static void prependPromptEntries(ObjectNode prefill, ObjectNode decode, int entries) {
        if (entries == 0) {
            return;
        }
        long promptLength = promptTextLength(prefill, entries);
        for (String name : PARALLEL_ARRAYS) {
            if (!(prefill.get(name) instanceof ArrayNode from) || !(decode.get(name) instanceof ArrayNode generated)) {
                continue;
            }
            ArrayNode merged = decode.arrayNode(entries + generated.size());
            for (int i = 0; i < Math.min(entries, from.size()); i++) {
                merged.add(from.get(i));
            }
            boolean shift = name.equals("text_offset") && !generated.isEmpty()
                    && generated.get(0).asLong() < promptLength;
            for (JsonNode entry : generated) {
                merged.add(shift ? merged.numberNode(entry.asLong() + promptLength) : entry);
            }
            decode.set(name, merged);
        }
    }

    /** End of the last prompt token in the echoed text: its offset plus its length; -1 when unknown. */
    private static long promptTextLength(ObjectNode prefill, int entries) {
        JsonNode offsets = prefill.get("text_offset");
        JsonNode tokens = prefill.get("tokens");
        if (offsets == null || tokens == null || offsets.size() < entries || tokens.size() < entries) {
            return -1;
        }
        String last = tokens.get(entries - 1).asText();
        // Offsets count characters (Python's len), i.e. code points, not UTF-16 units.
        return offsets.get(entries - 1).asLong() + last.codePointCount(0, last.length());
    }
}
