package org.vllmrouter.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.vllmrouter.core.policy.LiveLoad;

class VllmLoadMetricsTest {

    @Test
    void theQueueAndBatchAddUpOverEnginesAndTheFullestCacheCounts() {
        LiveLoad.Sample s = VllmLoadMetrics.parse("""
                # HELP vllm:num_requests_waiting Number of requests waiting to be processed.
                # TYPE vllm:num_requests_waiting gauge
                vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
                vllm:num_requests_waiting{engine="1",model_name="m"} 2.0
                vllm:num_requests_running{engine="0",model_name="m"} 7.0
                vllm:num_requests_running{engine="1",model_name="m"} 9.0 1700000000000
                vllm:num_requests_waiting_by_reason{engine="0",reason="capacity"} 99.0
                vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
                vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
                vllm:prefix_cache_hits_total{engine="0"} 1234.0
                """);
        assertEquals(new LiveLoad.Sample(5, 16, 0.75), s);
    }

    @Test
    void olderReleasesNameTheCacheGaugeAfterTheGpu() {
        LiveLoad.Sample s = VllmLoadMetrics.parse("vllm:num_requests_running 4\nvllm:gpu_cache_usage_perc 0.5\n");
        assertEquals(new LiveLoad.Sample(0, 4, 0.5), s);
    }

    @Test
    void noLoadSeriesOrAMalformedValueGivesNoSample() {
        assertNull(VllmLoadMetrics.parse("process_cpu_seconds_total 12.0\n"));
        assertNull(VllmLoadMetrics.parse("<html>not found</html>"));
        assertNull(VllmLoadMetrics.parse("vllm:num_requests_waiting{engine=\"0\"} lots\nvllm:num_requests_running 1\n"));
        assertNull(VllmLoadMetrics.parse("vllm:num_requests_running NaN\n"));
        assertTrue(Double.isNaN(VllmLoadMetrics.parse("vllm:num_requests_waiting 0\n").kvCacheUsage()));
    }
}
