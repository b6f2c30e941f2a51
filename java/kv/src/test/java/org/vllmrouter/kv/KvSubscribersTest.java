package org.vllmrouter.kv;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.mock.Knobs;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;

/** Mock vLLM workers publish over real sockets; subscribers feed the index; lookups see it. */
class KvSubscribersTest {

    static final int BLOCK = 4;
    static final CacheIdentity MODEL = new CacheIdentity("mock", BLOCK);
    static final HttpClient HTTP = HttpClient.newHttpClient();
    static final ObjectMapper JSON = new ObjectMapper();

    final PrometheusRegistry registry = new PrometheusRegistry();
    final KvMetrics metrics = new KvMetrics(registry);
    final KvIndex index = new KvIndex(100_000, metrics);
    KvSubscribers subscribers = new KvSubscribers(index, metrics,
            KvSubscribers.Settings.DEFAULTS.withReplayDeadline(Duration.ofSeconds(5)));
    MockWorkers mock;

    @AfterEach
    void stop() {
        subscribers.close();
        if (mock != null) {
            mock.close();
        }
    }

    MockWorker start(Consumer<Knobs> knobs) throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(2)
                .all(k -> knobs.accept(k.kvEvents(true).blockSize(BLOCK))).build());
        for (MockWorker w : mock.workers()) {
            subscribe(w, w.kvEvents().topic());
            awaitSubscribed(w);
        }
        return mock.worker(0);
    }

    /**
     * Waits until a probe prompt reaches the index. A new subscription misses what the publisher
     * sends before it is set up; the next batch then shows a gap and replays the rest.
     */
    void awaitSubscribed(MockWorker w) {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            String probe = prompt("probe " + System.nanoTime());
            complete(w, probe);
            assertEquals(cachedBlocks(w, probe), depth(w, probe, Tier.DEVICE));
        });
    }

    /** Starts the subscriber of {@code w} from its own {@code /kv_event_sources}, with the topic given. */
    void subscribe(MockWorker w, String topic) throws Exception {
        JsonNode rank0 = JSON.readTree(get(w.url() + "/kv_event_sources")).get("0");
        subscribers.start(new SourceId(w.url(), 0), MODEL,
                new KvEventSource(rank0.get("endpoint").asText(), rank0.get("replay_endpoint").asText(), topic));
    }

    static String get(String url) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    static String post(String url, String body) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    static String prompt(String seed) {
        return seed + " " + "lorem ipsum dolor ".repeat(4);
    }

    /** Sends a completion, so the worker caches the prompt's blocks and publishes them. */
    static void complete(MockWorker w, String prompt) throws Exception {
        post(w.url() + "/v1/completions", "{\"prompt\":\"" + prompt + "\"}");
    }

    /** The prompt's block keys, from the worker's render route (the router's way to tokenize). */
    static long[] keys(MockWorker w, String prompt) throws Exception {
        JsonNode ids = JSON.readTree(post(w.url() + "/v1/completions/render", "{\"prompt\":\"" + prompt + "\"}"))
                .get(0).get("token_ids");
        int[] tokens = new int[ids.size()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = ids.get(i).asInt();
        }
        return BlockKeys.of(tokens, BLOCK, null);
    }

    /** Blocks the worker caches for a prompt: every full block but one that ends on the last token. */
    static int cachedBlocks(MockWorker w, String prompt) throws Exception {
        long[] keys = keys(w, prompt);
        return (keys.length * BLOCK == tokenCount(w, prompt)) ? keys.length - 1 : keys.length;
    }

    static int tokenCount(MockWorker w, String prompt) throws Exception {
        return JSON.readTree(post(w.url() + "/v1/completions/render", "{\"prompt\":\"" + prompt + "\"}"))
                .get(0).get("token_ids").size();
    }

    int depth(MockWorker w, String prompt, Tier tier) throws Exception {
        return index.match(MODEL, keys(w, prompt), List.of(w.url())).blocks(0, tier);
    }

    void awaitDepth(MockWorker w, String prompt, Tier tier, int expected) {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertEquals(expected, depth(w, prompt, tier)));
    }

    double counter(String name, MockWorker w, String... labels) {
        String[] all = new String[labels.length + 4];
        all[0] = "worker";
        all[1] = w.url();
        all[2] = "dp_rank";
        all[3] = "0";
        System.arraycopy(labels, 0, all, 4, labels.length);
        return Scrape.value(registry, name, all);
    }

    @Test
    void storedBlocksBecomeQueryableOnTheWorkerThatHoldsThem() throws Exception {
        MockWorker w = start(k -> {});
        MockWorker other = mock.worker(1);
        String p = prompt("first");
        complete(w, p);
        int blocks = cachedBlocks(w, p);
        assertTrue(blocks >= 4);
        awaitDepth(w, p, Tier.DEVICE, blocks);
        PrefixMatch m = index.match(MODEL, keys(w, p), List.of(w.url(), other.url()));
        assertEquals(blocks, m.blocks(0, Tier.DEVICE));
        assertEquals(0, m.blocks(1, Tier.DEVICE));
        assertEquals(0, index.match(MODEL, keys(w, prompt("never sent")), List.of(w.url())).blocks(0, Tier.DEVICE));
        assertTrue(counter("vllm_router_kv_events_applied_total", w, "type", "stored") >= 1);
    }

    @Test
    void evictionToTheCpuTierRemovalAndClearAreReflected() throws Exception {
        MockWorker w = start(k -> k.cacheBlocks(8).cpuCacheBlocks(64));
        String old = prompt("old");
        complete(w, old);
        int blocks = cachedBlocks(w, old);
        awaitDepth(w, old, Tier.DEVICE, blocks);
        String fresh = prompt("fresh");
        complete(w, fresh);
        awaitDepth(w, fresh, Tier.DEVICE, cachedBlocks(w, fresh));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            PrefixMatch m = index.match(MODEL, keys(w, old), List.of(w.url()));
            assertEquals(blocks, m.blocksAtOrFaster(0, Tier.HOST), "evicted blocks moved to host memory");
            assertTrue(m.blocksAtOrFaster(0, Tier.DEVICE) < blocks, "and left the GPU");
        });
        post(w.url() + "/reset_prefix_cache", "");
        awaitDepth(w, fresh, Tier.DEVICE, 0);
        assertEquals(0, index.match(MODEL, keys(w, old), List.of(w.url())).blocksAtOrFaster(0, Tier.DISK));
    }

    @Test
    void aGapIsReplayedWithVllmsReplyShape() throws Exception {
        replaysAGap(false);
    }

    @Test
    void aGapIsReplayedWithATopicFrameInTheReply() throws Exception {
        replaysAGap(true);
    }

    void replaysAGap(boolean topicFrame) throws Exception {
        MockWorker w = start(k -> k.kvTopic("kv@w").kvReplayTopicFrame(topicFrame));
        String warm = prompt("warm");
        complete(w, warm);
        awaitDepth(w, warm, Tier.DEVICE, cachedBlocks(w, warm));
        double replayedBefore = counter("vllm_router_kv_event_batches_total", w, "result", "replayed");
        w.knobs().kvDropNext(1);
        String lost = prompt("lost live");
        complete(w, lost);
        String next = prompt("next");
        complete(w, next);
        awaitDepth(w, next, Tier.DEVICE, cachedBlocks(w, next));
        awaitDepth(w, lost, Tier.DEVICE, cachedBlocks(w, lost));
        assertTrue(counter("vllm_router_kv_sequence_gaps_total", w) >= 1);
        assertTrue(counter("vllm_router_kv_replays_total", w, "result", "complete") >= 1);
        assertTrue(counter("vllm_router_kv_event_batches_total", w, "result", "replayed") > replayedBefore);
    }

    @Test
    void aRelayedCacheResetDropsThatWorkersClaimsAtOnceAndOnlyItsClaims() throws Exception {
        MockWorker w = start(k -> {});
        MockWorker other = mock.worker(1);
        String held = prompt("held before the reset");
        complete(w, held);
        complete(other, held);
        awaitDepth(w, held, Tier.DEVICE, cachedBlocks(w, held));
        awaitDepth(other, held, Tier.DEVICE, cachedBlocks(other, held));
        subscribers.cleared(w.url());
        assertEquals(0, depth(w, held, Tier.DEVICE), "dropped without waiting for the worker's own event");
        assertEquals(cachedBlocks(other, held), depth(other, held, Tier.DEVICE));
        String after = prompt("stored after the reset");
        complete(w, after);
        awaitDepth(w, after, Tier.DEVICE, cachedBlocks(w, after));
    }

    @Test
    void aPublisherRestartClearsThatWorkersClaimsOnly() throws Exception {
        MockWorker w = start(k -> {});
        MockWorker other = mock.worker(1);
        String before = prompt("before restart");
        complete(w, before);
        complete(other, before);
        awaitDepth(w, before, Tier.DEVICE, cachedBlocks(w, before));
        awaitDepth(other, before, Tier.DEVICE, cachedBlocks(other, before));
        w.knobs().kvRestartNext(true);
        String after = prompt("after restart");
        complete(w, after);
        awaitDepth(w, after, Tier.DEVICE, cachedBlocks(w, after));
        awaitDepth(w, before, Tier.DEVICE, 0);
        assertEquals(cachedBlocks(other, before), depth(other, before, Tier.DEVICE));
        assertEquals(1, counter("vllm_router_kv_publisher_restarts_total", w));
    }

    @Test
    void eachMalformedBatchIsRejectedCountedAndTheClaimsStay() throws Exception {
        subscribers.close();
        subscribers = new KvSubscribers(index, metrics, new KvSubscribers.Settings(100_000, Duration.ofSeconds(5),
                64 * 1024, 1_000, Duration.ofSeconds(30)));
        MockWorker w = start(k -> {});
        String kept = prompt("kept");
        complete(w, kept);
        int blocks = cachedBlocks(w, kept);
        awaitDepth(w, kept, Tier.DEVICE, blocks);

        List<Object> manyEvents = new java.util.ArrayList<>();
        for (int i = 0; i < 1_001; i++) {
            manyEvents.add(Msgpack.cleared());
        }
        java.util.Map<String, Object> intHash = Msgpack.stored(new long[] {1}, null, Msgpack.tokens(0, 4), 4, "GPU");
        intHash.put("block_hashes", List.of("not a hash"));
        java.util.Map<String, Object> noTokens = Msgpack.stored(new long[] {1}, null, Msgpack.tokens(0, 4), 4, "GPU");
        noTokens.remove("token_ids");
        List<Object[]> cases = List.of(
                new Object[] {"not_msgpack", new byte[] {(byte) 0xc1, 0x00}},
                new Object[] {"bad_batch", Msgpack.pack(Msgpack.map("ts", 1.0, "events", List.of()))},
                new Object[] {"unknown_event", Msgpack.batch(Msgpack.map("type", "BlockTeleported"))},
                new Object[] {"missing_field", Msgpack.batch(noTokens)},
                new Object[] {"bad_hash", Msgpack.batch(intHash)},
                new Object[] {"trailing_bytes", EventBatchDecoderTest.concat(Msgpack.batch(Msgpack.cleared()), new byte[] {1})},
                new Object[] {"too_large", new byte[100 * 1024]},
                new Object[] {"too_large", Msgpack.pack(List.of(1.0, manyEvents))},
                new Object[] {"not_msgpack", new byte[0]});
        for (Object[] c : cases) {
            String reason = (String) c[0];
            double before = counter("vllm_router_kv_event_batches_rejected_total", w, "reason", reason);
            w.kvEvents().publishRaw((byte[]) c[1]);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertEquals(before + 1, counter("vllm_router_kv_event_batches_rejected_total", w, "reason", reason)));
            assertEquals(blocks, depth(w, kept, Tier.DEVICE), reason + " kept the claims");
        }
        String later = prompt("later");
        complete(w, later);
        awaitDepth(w, later, Tier.DEVICE, cachedBlocks(w, later));
        assertEquals(blocks, depth(w, kept, Tier.DEVICE));
        assertEquals(0, counter("vllm_router_kv_publisher_restarts_total", w));
    }

    @Test
    void theMockMalformedKnobIsRejectedAndTheRealBatchAfterItApplied() throws Exception {
        MockWorker w = start(k -> k.kvHashBytes(true));
        w.knobs().kvMalformedNext(1);
        String p = prompt("after garbage");
        complete(w, p);
        awaitDepth(w, p, Tier.DEVICE, cachedBlocks(w, p));
        assertEquals(1, counter("vllm_router_kv_event_batches_rejected_total", w, "reason", "not_msgpack"));
    }

    @Test
    void aNamedTopicTakesOnlyThatTopicAndCountsTheRest() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.kvEvents(true).blockSize(BLOCK).kvTopic("kv-events")).build());
        MockWorker w = mock.worker(0);
        subscribe(w, "kv");
        String p = prompt("topic");
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            complete(w, prompt("probe " + System.nanoTime()));
            assertTrue(counter("vllm_router_kv_messages_dropped_total", w, "reason", "topic") >= 1);
        });
        complete(w, p);
        assertEquals(0, depth(w, p, Tier.DEVICE), "'kv' is only a prefix of 'kv-events'");
        assertEquals(0, index.blocks());

        subscribe(w, "kv-events");
        awaitSubscribed(w);
    }

    @Test
    void anEmptyTopicTakesWhateverTopicThePublisherUses() throws Exception {
        mock = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.kvEvents(true).blockSize(BLOCK).kvTopic("kv-events")).build());
        MockWorker w = mock.worker(0);
        subscribe(w, "");
        awaitSubscribed(w);
        String p = prompt("any topic");
        complete(w, p);
        awaitDepth(w, p, Tier.DEVICE, cachedBlocks(w, p));
    }

    @Test
    void stoppingAWorkerReleasesItsClaims() throws Exception {
        MockWorker w = start(k -> {});
        String p = prompt("goes away");
        complete(w, p);
        awaitDepth(w, p, Tier.DEVICE, cachedBlocks(w, p));
        subscribers.stopWorker(w.url());
        assertEquals(0, depth(w, p, Tier.DEVICE));
        assertEquals(List.of(new SourceId(mock.worker(1).url(), 0)), subscribers.sources());
    }
}
