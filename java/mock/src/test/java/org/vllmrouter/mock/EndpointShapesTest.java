package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Every route answers in the shape a vLLM (or SGLang) client reads. */
class EndpointShapesTest {

    static MockWorkers mock;
    static String url;
    static String id;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.single());
        url = mock.urls().get(0);
        id = mock.worker(0).id();
    }

    @AfterAll
    static void stop() {
        mock.close();
    }

    private static JsonNode ok(HttpResponse<String> res) throws Exception {
        assertEquals(200, res.statusCode(), res.body());
        assertEquals(id, res.headers().firstValue("x-worker-id").orElseThrow());
        return Http.json(res);
    }

    @Test
    void completions() throws Exception {
        String body = "{\"model\":\"m1\",\"prompt\":\"hello world\",\"max_tokens\":3,\"return_token_ids\":true}";
        JsonNode r = ok(Http.post(url + "/v1/completions", body));
        assertEquals("text_completion", r.get("object").asText());
        assertEquals("m1", r.get("model").asText());
        JsonNode c = r.get("choices").get(0);
        assertEquals("ok ok ok", c.get("text").asText());
        assertEquals("stop", c.get("finish_reason").asText());
        assertEquals(3, c.get("token_ids").size());
        assertEquals(MockTokenizer.encode("hello world").length, r.get("usage").get("prompt_tokens").asInt());
        assertEquals(3, r.get("usage").get("completion_tokens").asInt());
        assertEquals(0, r.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt());
        assertEquals(id, r.get("worker_id").asText());
        assertEquals(Http.JSON.readTree(body), r.get("echo"));
    }

    @Test
    void completionsDefaultIsOneTokenOk() throws Exception {
        JsonNode r = ok(Http.post(url + "/v1/completions", "{\"prompt\":[1,2,3]}"));
        assertEquals("ok", r.get("choices").get(0).get("text").asText());
        assertEquals("mock", r.get("model").asText());
        assertEquals(3, r.get("usage").get("prompt_tokens").asInt());
    }

    @Test
    void completionsBatchAndN() throws Exception {
        JsonNode r = ok(Http.post(url + "/v1/completions", "{\"prompt\":[\"a\",\"b\"],\"n\":2}"));
        assertEquals(4, r.get("choices").size());
        assertEquals(3, r.get("choices").get(3).get("index").asInt());
    }

    @Test
    void echoIsByteFaithful() throws Exception {
        String body = "{\"prompt\":\"x\",  \"temperature\":1.0E0,\"big\":12345678901234567890123,"
                + "\"nested\":{\"z\":null,\"a\":[true,\"\\u00e9\"]},\"cache_salt\":\"s\"}";
        HttpResponse<String> res = Http.post(url + "/v1/completions", body);
        assertEquals(200, res.statusCode());
        assertTrue(res.body().contains("\"echo\":" + body), res.body());
    }

    @Test
    void chatCompletions() throws Exception {
        String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"max_completion_tokens\":2,\"logprobs\":true}";
        JsonNode r = ok(Http.post(url + "/v1/chat/completions", body));
        assertEquals("chat.completion", r.get("object").asText());
        assertTrue(r.get("id").asText().startsWith("chatcmpl-"));
        JsonNode c = r.get("choices").get(0);
        assertEquals("assistant", c.get("message").get("role").asText());
        assertEquals("ok ok", c.get("message").get("content").asText());
        assertEquals(2, c.get("logprobs").get("content").size());
        assertEquals("stop", c.get("finish_reason").asText());
        assertTrue(r.get("usage").get("prompt_tokens").asInt() > 0);
    }

    @Test
    void sglangGenerate() throws Exception {
        JsonNode r = ok(Http.post(url + "/generate",
                "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2}}"));
        assertEquals("ok ok", r.get("text").asText());
        assertEquals("stop", r.get("meta_info").get("finish_reason").get("type").asText());
        assertEquals(2, r.get("meta_info").get("completion_tokens").asInt());

        JsonNode batch = ok(Http.post(url + "/generate", "{\"input_ids\":[[1,2],[3]]}"));
        assertTrue(batch.isArray());
        assertEquals(2, batch.size());
    }

    @Test
    void inferenceGenerate() throws Exception {
        String body = "{\"model\":\"m\",\"token_ids\":[5,6,7],"
                + "\"sampling_params\":{\"max_tokens\":4,\"logprobs\":0,\"prompt_logprobs\":0}}";
        JsonNode r = ok(Http.post(url + "/inference/v1/generate", body));
        JsonNode c = r.get("choices").get(0);
        assertEquals(4, c.get("token_ids").size());
        assertEquals("stop", c.get("finish_reason").asText());
        assertEquals(4, c.get("logprobs").get("content").size());
        assertEquals(-0.125, c.get("logprobs").get("content").get(0).get("logprob").asDouble());
        assertEquals(3, r.get("prompt_logprobs").size());
        assertEquals(3, r.get("usage").get("prompt_tokens").asInt());
    }

    @Test
    void embeddings() throws Exception {
        JsonNode r = ok(Http.post(url + "/v1/embeddings", "{\"model\":\"e\",\"input\":[\"a\",\"b\"]}"));
        assertEquals("list", r.get("object").asText());
        assertEquals(2, r.get("data").size());
        assertEquals(8, r.get("data").get(1).get("embedding").size());
        assertEquals("embedding", r.get("data").get(0).get("object").asText());
    }

    @Test
    void rerank() throws Exception {
        String body = "{\"query\":\"red apple\",\"documents\":[\"blue sky\",\"a red apple\",\"red car\"],\"top_n\":2}";
        for (String path : new String[] {"/v1/rerank", "/rerank"}) {
            JsonNode r = ok(Http.post(url + path, body));
            JsonNode results = r.get("results");
            assertEquals(2, results.size());
            assertEquals(1, results.get(0).get("index").asInt());
            assertEquals(1.0, results.get(0).get("relevance_score").asDouble());
            assertEquals("a red apple", results.get(0).get("document").get("text").asText());
        }
    }

    @Test
    void responses() throws Exception {
        JsonNode r = ok(Http.post(url + "/v1/responses", "{\"model\":\"m\",\"input\":\"hello\"}"));
        assertEquals("response", r.get("object").asText());
        assertEquals("completed", r.get("status").asText());
        assertEquals("ok", r.get("output").get(0).get("content").get(0).get("text").asText());
        assertTrue(r.get("usage").get("input_tokens").asInt() > 0);

        String rid = r.get("id").asText();
        assertEquals("completed", ok(Http.get(url + "/v1/responses/" + rid)).get("status").asText());
        assertEquals("cancelled", ok(Http.post(url + "/v1/responses/" + rid + "/cancel", "")).get("status").asText());
        assertEquals(404, Http.get(url + "/v1/responses/resp_unknown").statusCode());
        assertEquals(405, Http.post(url + "/v1/responses/" + rid, "{}").statusCode());
    }

    @Test
    void tokenizeDetokenizeRoundTrip() throws Exception {
        String text = "héllo, wörld! 🙂";
        JsonNode t = ok(Http.post(url + "/tokenize",
                Http.JSON.createObjectNode().put("model", "m").put("prompt", text).toString()));
        assertEquals(t.get("tokens").size(), t.get("count").asInt());
        JsonNode d = ok(Http.post(url + "/detokenize",
                Http.JSON.createObjectNode().set("tokens", t.get("tokens")).toString()));
        assertEquals(text, d.get("prompt").asText());
    }

    @Test
    void chatRender() throws Exception {
        JsonNode r = ok(Http.post(url + "/v1/chat/completions/render",
                "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
        assertEquals(MockTokenizer.encode("<|user|>hi\n<|assistant|>").length, r.get("token_ids").size());
    }

    @Test
    void infoRoutes() throws Exception {
        assertEquals("ok", Http.get(url + "/health_generate").body());
        assertEquals("mock", ok(Http.get(url + "/v1/models")).get("data").get(0).get("id").asText());
        assertTrue(ok(Http.get(url + "/get_model_info")).has("vocab_size"));
        assertEquals(id, ok(Http.get(url + "/get_server_info")).get("worker_id").asText());
        assertEquals(0, ok(Http.get(url + "/get_load")).get("load").asInt());
        assertEquals(0, ok(Http.get(url + "/load")).get("server_load").asInt());
        HttpResponse<String> flush = Http.post(url + "/flush_cache", "");
        assertEquals(200, flush.statusCode());
    }

    @Test
    void errorsAreVllmShapedJson() throws Exception {
        HttpResponse<String> notFound = Http.get(url + "/nope");
        assertEquals(404, notFound.statusCode());
        assertEquals("NotFoundError", Http.json(notFound).get("error").get("type").asText());
        assertEquals(404, Http.json(notFound).get("error").get("code").asInt());

        assertEquals(405, Http.get(url + "/v1/completions").statusCode());

        for (String bad : new String[] {"", "{", "[1]", "{\"prompt\":5}", "{\"max_tokens\":1}",
                "{\"prompt\":\"x\",\"max_tokens\":\"many\"}", "{\"prompt\":\"x\",\"n\":0}"}) {
            HttpResponse<String> res = Http.post(url + "/v1/completions", bad);
            assertEquals(400, res.statusCode(), bad);
            JsonNode err = Http.json(res).get("error");
            assertEquals("BadRequestError", err.get("type").asText());
            assertFalse(err.get("message").asText().isEmpty());
        }
        assertEquals(400, Http.post(url + "/v1/chat/completions", "{\"messages\":\"hi\"}").statusCode());
        assertEquals(400, Http.post(url + "/inference/v1/generate", "{\"token_ids\":[\"a\"]}").statusCode());
        assertEquals(400, Http.post(url + "/detokenize", "{\"tokens\":\"a\"}").statusCode());
        assertEquals(400, Http.post(url + "/v1/rerank", "{\"query\":1,\"documents\":[]}").statusCode());
        assertEquals(200, Http.get(url + "/health").statusCode());
    }

    @Test
    void prefillAnswersWithKvTransferParamsAndDecodeSideIsCaptured() throws Exception {
        String prefill = "{\"prompt\":\"" + "word ".repeat(20) + "\",\"max_tokens\":1,\"stream\":false,"
                + "\"kv_transfer_params\":{\"do_remote_decode\":true,\"do_remote_prefill\":false,"
                + "\"remote_engine_id\":null,\"remote_block_ids\":null,\"remote_host\":null,\"remote_port\":null}}";
        JsonNode r = ok(Http.post(url + "/v1/completions", prefill));
        JsonNode kv = r.get("kv_transfer_params");
        assertEquals(id + "-engine", kv.get("remote_engine_id").asText());
        assertEquals(mock.worker(0).port(), kv.get("remote_port").asInt());
        assertEquals("127.0.0.1", kv.get("remote_host").asText());
        assertTrue(kv.get("remote_block_ids").size() > 0);
        assertEquals(1, r.get("usage").get("completion_tokens").asInt());

        String decode = "{\"prompt\":\"x\",\"kv_transfer_params\":" + kv + "}";
        JsonNode d = ok(Http.post(url + "/v1/completions", decode));
        assertFalse(d.has("kv_transfer_params"));
        var got = mock.worker(0).captured("/v1/completions");
        assertEquals(kv, got.get(got.size() - 1).json().get("kv_transfer_params"));
    }
}
