package org.vllmrouter.server.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The block size of a vLLM 0.32 {@code /metrics} answer, and what makes one unusable. */
class CacheConfigInfoTest {

    @Test
    void theBlockSizeLabelOfCacheConfigInfoIsRead() {
        String exposition = """
                # HELP vllm:num_requests_running Number of requests in model execution batches.
                # TYPE vllm:num_requests_running gauge
                vllm:num_requests_running{engine="0",model_name="m"} 0.0
                # HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
                # TYPE vllm:cache_config_info gauge
                vllm:cache_config_info{block_size="128",cache_dtype="auto",engine="0",note="a \\"q\\", b\\\\c\\n",} 1.0
                """;
        assertEquals(128, CacheConfigInfo.blockSize(exposition));
    }

    @Test
    void anAnswerWithoutAUsableBlockSizeSaysWhy() {
        assertEquals("no vllm:cache_config_info in /metrics, cannot index",
                reason("vllm:num_requests_running{engine=\"0\"} 0.0\n"));
        assertEquals("/metrics vllm:cache_config_info has no block_size label",
                reason("vllm:cache_config_info{cache_dtype=\"auto\"} 1.0\n"));
        for (String value : new String[] {"0", "-16", "16.0", "", "9999999999"}) {
            assertEquals("/metrics vllm:cache_config_info block_size is not a positive integer: '" + value + "'",
                    reason("vllm:cache_config_info{block_size=\"" + value + "\"} 1.0\n"));
        }
        for (String labels : new String[] {"block_size=16", "block_size=\"16\"", "block_size=\"16\" engine=\"0\"}",
                "block_size=\"16\",block_size=\"32\"}", "=\"16\"}", "1block=\"16\"}", "block_size=\"1\\t6\"}"}) {
            assertEquals("/metrics vllm:cache_config_info has a malformed label set",
                    reason("vllm:cache_config_info{" + labels + " 1.0\n"), labels);
        }
    }

    private static String reason(String exposition) {
        return assertThrows(IllegalStateException.class, () -> CacheConfigInfo.blockSize(exposition)).getMessage();
    }
}
