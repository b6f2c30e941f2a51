package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.util.RawValue;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The POST routes that do no generation: tokenize, detokenize, the two render routes,
 * embeddings and rerank. They answer at once (no latency model), in vLLM's shapes, with {@code worker_id}.
 */
final class UtilityRoutes {

    private static final int EMBEDDING_DIMS = 8;

    private UtilityRoutes() {}

    /** Request fields that vLLM's render answers carry over into {@code sampling_params}. */
    private static final List<String> SAMPLING_FIELDS = List.of("n", "temperature", "top_p", "top_k", "min_p", "seed",
            "stop", "presence_penalty", "frequency_penalty", "repetition_penalty", "logprobs", "min_tokens");

    static JsonNode answer(String path, JsonNode body, String rawBody, MockWorker worker) {
        if (path.equals("/v1/completions/render")) {
            return completionsRender(body, worker);
        }
        ObjectNode root = switch (path) {
            case "/tokenize" -> tokenize(body);
            case "/detokenize" -> detokenize(body);
            case "/v1/chat/completions/render" -> chatRender(body, worker);
            case "/v1/embeddings" -> embeddings(body, worker);
            case "/v1/rerank", "/rerank" -> rerank(body, worker);
            default -> throw new IllegalStateException(path);
        };
        root.put("worker_id", worker.id());
        root.putRawValue("echo", new RawValue(rawBody));
        return root;
    }

    private static ObjectNode tokenize(JsonNode body) {
        String text;
        if (body.hasNonNull("messages")) {
            text = MockTokenizer.renderChat(body.get("messages"));
        } else {
            JsonNode prompt = InferenceRequest.require(body, "prompt");
            if (!prompt.isTextual()) {
                throw new BadRequestException("'prompt' must be a string");
            }
            text = prompt.asText();
        }
        int[] ids = MockTokenizer.encode(text);
        ObjectNode root = Replies.JSON.createObjectNode();
        root.put("count", ids.length);
        root.put("max_model_len", MockApiHandler.MAX_MODEL_LEN);
        ArrayNode tokens = root.putArray("tokens");
        Arrays.stream(ids).forEach(tokens::add);
        root.putNull("token_strs");
        return root;
    }

    private static ObjectNode detokenize(JsonNode body) {
        JsonNode tokens = InferenceRequest.require(body, "tokens");
        if (!tokens.isArray() || !InferenceRequest.allInts(tokens)) {
            throw new BadRequestException("'tokens' must be a list of integers");
        }
        return Replies.JSON.createObjectNode().put("prompt", MockTokenizer.decode(InferenceRequest.ints(tokens)));
    }

    /**
     * vLLM's chat render: one generate request, whose {@code token_ids} are exactly the tokens
     * {@code /v1/chat/completions} would compute (and cache) for the same body. SkyRL reads
     * {@code token_ids} and {@code features}.
     */
    private static ObjectNode chatRender(JsonNode body, MockWorker worker) {
        int[] ids = MockTokenizer.encode(MockTokenizer.renderChat(InferenceRequest.require(body, "messages")));
        ObjectNode root = generateRequest(body, worker, "chatcmpl-render-", ids,
                body.hasNonNull("max_completion_tokens") ? "max_completion_tokens" : "max_tokens");
        root.putNull("features");
        return root;
    }

    /** vLLM's completions render: a list with one generate request per prompt (a batch has several). */
    private static ArrayNode completionsRender(JsonNode body, MockWorker worker) {
        List<int[]> prompts = InferenceRequest.promptList(InferenceRequest.require(body, "prompt"), "prompt");
        ArrayNode list = Replies.JSON.createArrayNode();
        for (int[] ids : prompts) {
            list.add(generateRequest(body, worker, "cmpl-render-", ids, "max_tokens"));
        }
        return list;
    }

    private static ObjectNode generateRequest(JsonNode body, MockWorker worker, String idPrefix, int[] ids,
                                              String maxTokensField) {
        ObjectNode root = Replies.JSON.createObjectNode();
        root.put("request_id", idPrefix + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE));
        ArrayNode tokenIds = root.putArray("token_ids");
        Arrays.stream(ids).forEach(tokenIds::add);
        ObjectNode sampling = root.putObject("sampling_params");
        JsonNode maxTokens = body.get(maxTokensField);
        sampling.put("max_tokens", maxTokens != null && maxTokens.canConvertToInt() ? maxTokens.intValue() : 16);
        for (String field : SAMPLING_FIELDS) {
            if (body.hasNonNull(field)) {
                sampling.set(field, body.get(field));
            }
        }
        root.put("model", body.path("model").isTextual() ? body.get("model").asText() : worker.knobs().model());
        return root;
    }

    /** Deterministic unit vectors derived from the input's tokens: equal inputs, equal vectors. */
    private static ObjectNode embeddings(JsonNode body, MockWorker worker) {
        List<int[]> inputs = InferenceRequest.promptList(InferenceRequest.require(body, "input"), "input");
        int dims = body.path("dimensions").asInt(EMBEDDING_DIMS);
        if (dims < 1 || dims > 4096) {
            throw new BadRequestException("'dimensions' must be in 1..4096");
        }
        ObjectNode root = Replies.JSON.createObjectNode();
        root.put("id", "embd-" + Long.toHexString(System.nanoTime()));
        root.put("object", "list");
        root.put("created", System.currentTimeMillis() / 1000);
        root.put("model", body.path("model").asText(worker.knobs().model()));
        ArrayNode data = root.putArray("data");
        int promptTokens = 0;
        for (int i = 0; i < inputs.size(); i++) {
            int[] tokens = inputs.get(i);
            promptTokens += tokens.length;
            ObjectNode item = data.addObject();
            item.put("index", i);
            item.put("object", "embedding");
            ArrayNode vec = item.putArray("embedding");
            long seed = Arrays.hashCode(tokens);
            double[] v = new double[dims];
            double norm = 0;
            for (int d = 0; d < dims; d++) {
                seed = seed * 6364136223846793005L + 1442695040888963407L;
                v[d] = ((seed >>> 11) * 0x1.0p-53) - 0.5;
                norm += v[d] * v[d];
            }
            double scale = norm == 0 ? 0 : 1 / Math.sqrt(norm);
            for (double x : v) {
                vec.add(x * scale);
            }
        }
        ObjectNode usage = root.putObject("usage");
        usage.put("prompt_tokens", promptTokens);
        usage.put("total_tokens", promptTokens);
        usage.put("completion_tokens", 0);
        usage.putNull("prompt_tokens_details");
        return root;
    }

    /** Relevance = share of the query's words found in the document, best first, as vLLM sorts. */
    private static ObjectNode rerank(JsonNode body, MockWorker worker) {
        JsonNode query = InferenceRequest.require(body, "query");
        JsonNode documents = InferenceRequest.require(body, "documents");
        if (!query.isTextual() || !documents.isArray()) {
            throw new BadRequestException("'query' must be a string and 'documents' a list");
        }
        Set<String> queryWords = words(query.asText());
        record Scored(int index, String text, double score) {}
        List<Scored> scored = new ArrayList<>();
        int tokens = MockTokenizer.encode(query.asText()).length;
        for (int i = 0; i < documents.size(); i++) {
            JsonNode d = documents.get(i);
            String text = d.isTextual() ? d.asText() : d.path("text").asText("");
            Set<String> docWords = words(text);
            long common = queryWords.stream().filter(docWords::contains).count();
            scored.add(new Scored(i, text, queryWords.isEmpty() ? 0.0 : (double) common / queryWords.size()));
            tokens += MockTokenizer.encode(text).length;
        }
        scored.sort((a, b) -> a.score() != b.score() ? Double.compare(b.score(), a.score())
                : Integer.compare(a.index(), b.index()));
        int topN = body.path("top_n").asInt(scored.size());
        if (topN > 0 && topN < scored.size()) {
            scored = scored.subList(0, topN);
        }
        ObjectNode root = Replies.JSON.createObjectNode();
        root.put("id", "rerank-" + Long.toHexString(System.nanoTime()));
        root.put("model", body.path("model").asText(worker.knobs().model()));
        root.putObject("usage").put("total_tokens", tokens);
        ArrayNode results = root.putArray("results");
        for (Scored s : scored) {
            ObjectNode r = results.addObject();
            r.put("index", s.index());
            r.putObject("document").put("text", s.text());
            r.put("relevance_score", s.score());
        }
        return root;
    }

    private static Set<String> words(String text) {
        Set<String> out = new HashSet<>();
        for (String w : text.toLowerCase(Locale.ROOT).split("\\W+")) {
            if (!w.isEmpty()) {
                out.add(w);
            }
        }
        return out;
    }
}
