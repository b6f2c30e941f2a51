package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.util.RawValue;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One generation after the prefix-cache lookup: token counts, the generated tokens, and the
 * vLLM/SGLang-shaped bodies built from them (full answers and SSE chunks).
 */
final class Generation {

    private static final double TOKEN_LOGPROB = -0.125;

    final InferenceRequest req;
    final JsonNode body;
    final String rawBody;
    final MockWorker worker;
    final int[] cachedPerPrompt;
    final int promptTokens;
    final int cachedTokens;
    final int[] outputIds;
    final String id;
    final long created = System.currentTimeMillis() / 1000;

    Generation(InferenceRequest req, JsonNode body, String rawBody, MockWorker worker) {
        this.req = req;
        this.body = body;
        this.rawBody = rawBody;
        this.worker = worker;
        Knobs k = worker.knobs();
        cachedPerPrompt = new int[req.prompts().size()];
        int p = 0;
        int c = 0;
        for (int i = 0; i < cachedPerPrompt.length; i++) {
            int[] tokens = req.prompts().get(i);
            cachedPerPrompt[i] = worker.cache().lookupAndInsert(tokens, k);
            p += tokens.length;
            c += cachedPerPrompt[i];
        }
        promptTokens = p;
        cachedTokens = c;
        outputIds = MockTokenizer.encode(MockTokenizer.completionText(req.outputTokens()));
        id = prefix(req.kind()) + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    int completionTokens() {
        return outputIds.length * req.n() * req.prompts().size();
    }

    String text() {
        return MockTokenizer.decode(outputIds);
    }

    /** Microseconds spent before the first token: fixed latency plus prefill of uncached tokens. */
    long prefillMicros() {
        Knobs k = worker.knobs();
        return k.latencyMs() * 1000 + k.prefillUsPerToken() * (long) (promptTokens - cachedTokens);
    }

    long decodeMicros(int tokens) {
        return worker.knobs().decodeUsPerToken() * (long) tokens;
    }

    /** The complete (non-streaming) answer. */
    JsonNode fullAnswer() {
        return switch (req.kind()) {
            case COMPLETIONS -> completions();
            case CHAT -> chat();
            case GENERATE -> generate();
            case INFERENCE_GENERATE -> inferenceGenerate();
            case RESPONSES -> responses();
        };
    }

    private ObjectNode envelope(String object) {
        ObjectNode root = Replies.JSON.createObjectNode();
        root.put("id", id);
        root.put("object", object);
        root.put("created", created);
        root.put("model", req.model());
        return root;
    }

    /** The fields every full answer carries after the vLLM ones: identity, echo, PD hand-off. */
    private void finish(ObjectNode root) {
        if (req.prefillForRemoteDecode()) {
            root.set("kv_transfer_params", kvTransferParams());
        }
        root.put("worker_id", worker.id());
        root.put("weight_version", worker.engineState().weightVersion());
        root.putRawValue("echo", new RawValue(rawBody));
    }

    ObjectNode usage() {
        ObjectNode u = Replies.JSON.createObjectNode();
        u.put("prompt_tokens", promptTokens);
        u.put("total_tokens", promptTokens + completionTokens());
        u.put("completion_tokens", completionTokens());
        u.putObject("prompt_tokens_details").put("cached_tokens", cachedTokens);
        return u;
    }

    /** What a prefill worker hands to the decode worker, in vLLM's NixlConnector shape. */
    private ObjectNode kvTransferParams() {
        ObjectNode kv = Replies.JSON.createObjectNode();
        kv.put("do_remote_prefill", true);
        kv.put("do_remote_decode", false);
        kv.put("remote_engine_id", worker.id() + "-engine");
        ArrayNode blocks = kv.putArray("remote_block_ids");
        int n = (promptTokens + worker.knobs().blockSize() - 1) / worker.knobs().blockSize();
        for (int b = 0; b < n; b++) {
            blocks.add(b);
        }
        kv.put("remote_host", "127.0.0.1");
        kv.put("remote_port", worker.port());
        kv.put("tp_size", 1);
        return kv;
    }

    private ObjectNode completions() {
        ObjectNode root = envelope("text_completion");
        ArrayNode choices = root.putArray("choices");
        boolean returnIds = body.path("return_token_ids").asBoolean(false);
        boolean logprobs = body.hasNonNull("logprobs");
        int index = 0;
        for (int[] prompt : req.prompts()) {
            for (int j = 0; j < req.n(); j++) {
                ObjectNode c = choices.addObject();
                c.put("index", index++);
                c.put("text", text());
                if (logprobs) {
                    ObjectNode lp = c.putObject("logprobs");
                    ArrayNode tokens = lp.putArray("tokens");
                    ArrayNode values = lp.putArray("token_logprobs");
                    for (int t : outputIds) {
                        tokens.add(MockTokenizer.decode(new int[] {t}));
                        values.add(TOKEN_LOGPROB);
                    }
                } else {
                    c.putNull("logprobs");
                }
                c.put("finish_reason", "stop");
                c.putNull("stop_reason");
                if (returnIds) {
                    c.set("prompt_token_ids", intArray(prompt));
                    c.set("token_ids", intArray(outputIds));
                }
            }
        }
        root.set("usage", usage());
        finish(root);
        return root;
    }

    private ObjectNode chat() {
        ObjectNode root = envelope("chat.completion");
        ArrayNode choices = root.putArray("choices");
        boolean logprobs = body.path("logprobs").asBoolean(false);
        for (int j = 0; j < req.n(); j++) {
            ObjectNode c = choices.addObject();
            c.put("index", j);
            ObjectNode msg = c.putObject("message");
            msg.put("role", "assistant");
            msg.put("content", text());
            msg.putArray("tool_calls");
            if (logprobs) {
                ArrayNode content = c.putObject("logprobs").putArray("content");
                for (int t : outputIds) {
                    content.addObject().put("token", MockTokenizer.decode(new int[] {t}))
                            .put("logprob", TOKEN_LOGPROB);
                }
            } else {
                c.putNull("logprobs");
            }
            c.put("finish_reason", "stop");
            c.putNull("stop_reason");
        }
        root.set("usage", usage());
        finish(root);
        return root;
    }

    /** SGLang's /generate: one object, or a list of them for a batch. */
    private JsonNode generate() {
        if (req.prompts().size() == 1) {
            ObjectNode one = generateItem(0, outputIds.length, true);
            finish(one);
            return one;
        }
        ArrayNode batch = Replies.JSON.createArrayNode();
        for (int i = 0; i < req.prompts().size(); i++) {
            ObjectNode item = generateItem(i, outputIds.length, true);
            item.put("worker_id", worker.id());
            batch.add(item);
        }
        return batch;
    }

    private ObjectNode generateItem(int prompt, int tokensSoFar, boolean done) {
        ObjectNode item = Replies.JSON.createObjectNode();
        int[] ids = Arrays.copyOf(outputIds, tokensSoFar);
        item.put("text", MockTokenizer.decode(ids));
        item.set("output_ids", intArray(ids));
        ObjectNode meta = item.putObject("meta_info");
        meta.put("id", id);
        if (done) {
            meta.putObject("finish_reason").put("type", "stop").putNull("matched");
        } else {
            meta.putNull("finish_reason");
        }
        meta.put("prompt_tokens", req.prompts().get(prompt).length);
        meta.put("completion_tokens", tokensSoFar);
        meta.put("cached_tokens", cachedPerPrompt[prompt]);
        return item;
    }

    /** vLLM's token-in/token-out endpoint, as SkyRL reads it ({@code choices[i].token_ids}). */
    private ObjectNode inferenceGenerate() {
        ObjectNode root = Replies.JSON.createObjectNode();
        root.put("request_id", id);
        JsonNode sp = body.path("sampling_params");
        boolean logprobs = sp.hasNonNull("logprobs");
        ArrayNode choices = root.putArray("choices");
        for (int j = 0; j < req.n(); j++) {
            ObjectNode c = choices.addObject();
            c.put("index", j);
            c.set("token_ids", intArray(outputIds));
            if (logprobs) {
                ArrayNode content = c.putObject("logprobs").putArray("content");
                for (int t : outputIds) {
                    content.addObject().put("token", "token_id:" + t).put("logprob", TOKEN_LOGPROB);
                }
            } else {
                c.putNull("logprobs");
            }
            c.put("finish_reason", "stop");
        }
        if (sp.hasNonNull("prompt_logprobs")) {
            ArrayNode plp = root.putArray("prompt_logprobs");
            int[] prompt = req.prompts().get(0);
            for (int i = 0; i < prompt.length; i++) {
                if (i == 0) {
                    plp.addNull();
                } else {
                    plp.addObject().putObject(Integer.toString(prompt[i])).put("logprob", TOKEN_LOGPROB);
                }
            }
        }
        root.set("usage", usage());
        finish(root);
        return root;
    }

    private ObjectNode responses() {
        ObjectNode root = Replies.JSON.createObjectNode();
        root.put("id", id);
        root.put("object", "response");
        root.put("created_at", created);
        root.put("model", req.model());
        root.put("status", "completed");
        ObjectNode msg = root.putArray("output").addObject();
        msg.put("type", "message");
        msg.put("id", "msg_" + id.substring(prefix(req.kind()).length()));
        msg.put("status", "completed");
        msg.put("role", "assistant");
        ObjectNode text = msg.putArray("content").addObject();
        text.put("type", "output_text");
        text.put("text", text());
        text.putArray("annotations");
        ObjectNode u = root.putObject("usage");
        u.put("input_tokens", promptTokens);
        u.putObject("input_tokens_details").put("cached_tokens", cachedTokens);
        u.put("output_tokens", completionTokens());
        u.put("total_tokens", promptTokens + completionTokens());
        finish(root);
        worker.storeResponse(id, root);
        return root;
    }

    /**
     * SSE chunk {@code i} of {@code chunks}, carrying output tokens [from, to). The last content
     * chunk has the finish reason, as vLLM's does.
     */
    JsonNode streamChunk(int i, int chunks, int from, int to) {
        boolean last = i == chunks - 1;
        String piece = MockTokenizer.decode(Arrays.copyOfRange(outputIds, from, to));
        ObjectNode root;
        switch (req.kind()) {
            case CHAT -> {
                root = envelope("chat.completion.chunk");
                ObjectNode c = root.putArray("choices").addObject();
                c.put("index", 0);
                ObjectNode delta = c.putObject("delta");
                if (i == 0) {
                    delta.put("role", "assistant");
                }
                delta.put("content", piece);
                c.putNull("logprobs");
                putFinish(c, last);
            }
            case GENERATE -> root = generateItem(0, to, last);
            default -> {
                root = envelope("text_completion");
                ObjectNode c = root.putArray("choices").addObject();
                c.put("index", 0);
                c.put("text", piece);
                c.putNull("logprobs");
                putFinish(c, last);
            }
        }
        root.put("worker_id", worker.id());
        return root;
    }

    /** The trailing usage-only chunk asked for with {@code stream_options.include_usage}. */
    JsonNode usageChunk() {
        ObjectNode root = envelope(req.kind() == InferenceRequest.Kind.CHAT
                ? "chat.completion.chunk" : "text_completion");
        root.putArray("choices");
        root.set("usage", usage());
        root.put("worker_id", worker.id());
        return root;
    }

    private static void putFinish(ObjectNode choice, boolean last) {
        if (last) {
            choice.put("finish_reason", "stop");
        } else {
            choice.putNull("finish_reason");
        }
        choice.putNull("stop_reason");
    }

    private static ArrayNode intArray(int[] values) {
        ArrayNode a = Replies.JSON.createArrayNode();
        for (int v : values) {
            a.add(v);
        }
        return a;
    }

    private static String prefix(InferenceRequest.Kind kind) {
        return switch (kind) {
            case CHAT -> "chatcmpl-";
            case RESPONSES -> "resp_";
            case GENERATE, INFERENCE_GENERATE -> "gen-";
            case COMPLETIONS -> "cmpl-";
        };
    }
}
