package org.vllmrouter.sim;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.vllmrouter.core.policy.LiveLoad;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.rollout.EngineModel;

/**
 * The workers' own load as the router's scraper gives it to a policy: vLLM's waiting, running and KV-usage gauges of
 * each engine, read at {@link #INTERVAL_SECONDS} intervals ({@link #refresh}), so a policy sees them as stale between
 * two reads as it does live.
 */
final class ScrapedLoad implements LiveLoad {
    /** The router's scrape interval. */
    static final double INTERVAL_SECONDS = 1.0;

    private final EngineModel[] engines;
    private final Map<String, Integer> indexByBaseUrl = new HashMap<>();
    private final Sample[] samples;

    ScrapedLoad(List<Worker> workers, EngineModel[] engines) {
        this.engines = engines;
        this.samples = new Sample[engines.length];
        for (int i = 0; i < workers.size(); i++) {
            indexByBaseUrl.put(workers.get(i).baseUrl(), i);
        }
    }

    /** Reads every engine's gauges, as one scrape round does. */
    void refresh() {
        for (int i = 0; i < engines.length; i++) {
            EngineModel e = engines[i];
            samples[i] = new Sample(e.waitingCount(), e.runningCount(), (double) e.usedBlocks() / e.capacityBlocks());
        }
    }

    @Override
    public Sample of(String baseUrl) {
        Integer i = indexByBaseUrl.get(baseUrl);
        return i == null ? null : samples[i];
    }
}
