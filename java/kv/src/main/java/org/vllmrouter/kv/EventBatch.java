package org.vllmrouter.kv;

import java.util.List;

/** vLLM's {@code KVEventBatch}: {@code [ts, events, data_parallel_rank?]}, one per scheduler step. */
public record EventBatch(double ts, List<KvEvent> events, Integer dataParallelRank) {}
