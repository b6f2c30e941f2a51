package org.vllmrouter.server.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

/** The vLLM two-stage logprobs merge: prompt-side logprobs from prefill, generated-side logprobs from decode. */
class LogprobsMergeTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode json(String text) throws Exception {
        return JSON.readTree(text.replace('\'', '"'));
    }

    @Test
    void onlyNonStreamingRequestsAskingForLogprobsAreMerged() throws Exception {
        assertTrue(LogprobsMerge.requested(json("{'prompt':'x','logprobs':1}")));
        assertTrue(LogprobsMerge.requested(json("{'prompt':'x','logprobs':0}")));
        assertTrue(LogprobsMerge.requested(json("{'prompt':'x','echo':true}")));
        assertTrue(LogprobsMerge.requested(json("{'messages':[],'logprobs':true,'stream':false}")));
        assertFalse(LogprobsMerge.requested(json("{'messages':[],'logprobs':false}")));
        assertFalse(LogprobsMerge.requested(json("{'prompt':'x','logprobs':null,'echo':false}")));
        assertFalse(LogprobsMerge.requested(json("{'prompt':'x','logprobs':1,'stream':true}")));
        assertFalse(LogprobsMerge.requested(json("{'prompt':'x'}")));
    }

    @Test
    void completionsWithEchoGetThePromptEntriesInFrontAndShiftedOffsets() throws Exception {
        JsonNode prefill = json("{'choices':[{'index':0,'prompt_logprobs':[null,{'5':{'logprob':-0.5}}],"
                + "'logprobs':{'tokens':['Hi','é!','x'],'token_logprobs':[null,-0.5,-9],"
                + "'top_logprobs':[null,{'é!':-0.5},{'x':-9}],'text_offset':[0,2,4]}}],'kv_transfer_params':{}}");
        ObjectNode decode = (ObjectNode) json("{'choices':[{'index':0,'text':' ok ok',"
                + "'logprobs':{'tokens':[' ok',' ok'],'token_logprobs':[-1,-2],'top_logprobs':[{' ok':-1},{' ok':-2}],"
                + "'text_offset':[0,3]}}],'usage':{'prompt_tokens':2}}");
        LogprobsMerge.into(decode, prefill, true);
        JsonNode choice = decode.get("choices").get(0);
        assertEquals(prefill.get("choices").get(0).get("prompt_logprobs"), choice.get("prompt_logprobs"));
        JsonNode lp = choice.get("logprobs");
        assertEquals(json("['Hi','é!',' ok',' ok']"), lp.get("tokens"), "prefill's generated 'x' is dropped");
        assertEquals(json("[null,-0.5,-1,-2]"), lp.get("token_logprobs"));
        assertEquals(json("[null,{'é!':-0.5},{' ok':-1},{' ok':-2}]"), lp.get("top_logprobs"));
        assertEquals("[0,2,4,7]", lp.get("text_offset").toString(), "the prompt text 'Hié!' is 4 characters");
        assertEquals(" ok ok", choice.get("text").asText());
        assertEquals(2, decode.get("usage").get("prompt_tokens").asInt());
    }

    @Test
    void echoWithoutPromptLogprobsTakesAllButPrefillsGeneratedTokenAndKeepsAbsoluteOffsets() throws Exception {
        JsonNode prefill = json("{'choices':[{'logprobs':{'tokens':['a','b','c'],'token_logprobs':[null,-1,-3],"
                + "'text_offset':[0,1,2]}},{'logprobs':{'tokens':['a','b','d'],'token_logprobs':[null,-1,-4],"
                + "'text_offset':[0,1,2]}}]}");
        ObjectNode decode = (ObjectNode) json("{'choices':[{'logprobs':{'tokens':['e'],'token_logprobs':[-5],"
                + "'text_offset':[2]}},{'logprobs':{'tokens':['f'],'token_logprobs':[-6],'text_offset':[2]}}]}");
        LogprobsMerge.into(decode, prefill, true);
        assertEquals(json("['a','b','e']"), decode.get("choices").get(0).get("logprobs").get("tokens"));
        assertEquals(json("[0,1,2]"), decode.get("choices").get(0).get("logprobs").get("text_offset"),
                "decode's offsets already count from the start of the prompt");
        assertEquals(json("[null,-1,-6]"), decode.get("choices").get(1).get("logprobs").get("token_logprobs"));
        assertFalse(decode.get("choices").get(0).has("prompt_logprobs"));
    }

    @Test
    void withoutEchoOrPromptLogprobsTheDecodeAnswerIsUnchanged() throws Exception {
        JsonNode prefill = json("{'choices':[{'logprobs':{'tokens':['x'],'token_logprobs':[-9]},"
                + "'prompt_logprobs':null}]}");
        String answer = "{'choices':[{'logprobs':{'tokens':['e'],'token_logprobs':[-5]}}]}";
        ObjectNode decode = (ObjectNode) json(answer);
        LogprobsMerge.into(decode, prefill, false);
        assertEquals(json(answer), decode);
    }

    @Test
    void chatTakesTopLevelPromptLogprobsFromPrefillAndKeepsDecodesContent() throws Exception {
        JsonNode prefill = json("{'object':'chat.completion','prompt_logprobs':[null,{'7':{'logprob':-0.25}}],"
                + "'choices':[{'index':0,'logprobs':{'content':[{'token':'x','logprob':-9}]}}]}");
        ObjectNode decode = (ObjectNode) json("{'object':'chat.completion','prompt_logprobs':null,"
                + "'choices':[{'index':0,'logprobs':{'content':[{'token':'ok','logprob':-1},{'token':'!','logprob':-2}]}}]}");
        LogprobsMerge.into(decode, prefill, false);
        assertEquals(prefill.get("prompt_logprobs"), decode.get("prompt_logprobs"));
        assertEquals(json("[{'token':'ok','logprob':-1},{'token':'!','logprob':-2}]"),
                decode.get("choices").get(0).get("logprobs").get("content"));
    }
}
