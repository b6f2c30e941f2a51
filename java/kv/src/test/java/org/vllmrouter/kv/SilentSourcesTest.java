package org.vllmrouter.kv;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** Sources that say nothing, or never answer a replay: the subscriber neither hangs nor gives up. */
class SilentSourcesTest {

    static final CacheIdentity MODEL = new CacheIdentity("m", 4);
    static final String WORKER = "http://silent:8000";

    final PrometheusRegistry registry = new PrometheusRegistry();
    final KvMetrics metrics = new KvMetrics(registry);
    final KvIndex index = new KvIndex(10_000, metrics);
    final KvSubscribers subscribers = new KvSubscribers(index, metrics,
            KvSubscribers.Settings.DEFAULTS.withReplayDeadline(Duration.ofMillis(500)));
    final ZContext zmq = new ZContext();

    @AfterEach
    void close() {
        subscribers.close();
        zmq.close();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static boolean threadAlive(String name) {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals(name) && t.isAlive());
    }

    double counter(String name, String... labels) {
        String[] all = new String[labels.length + 4];
        all[0] = "worker";
        all[1] = WORKER;
        all[2] = "dp_rank";
        all[3] = "0";
        System.arraycopy(labels, 0, all, 4, labels.length);
        return Scrape.value(registry, name, all);
    }

    @Test
    void aSourceWithNothingListeningRunsUntilStopped() throws Exception {
        SourceId source = new SourceId(WORKER, 0);
        subscribers.start(source, MODEL, new KvEventSource("tcp://127.0.0.1:" + freePort(),
                "tcp://127.0.0.1:" + freePort(), ""));
        String thread = "kv-events-" + source;
        assertTrue(threadAlive(thread));
        subscribers.stop(source);
        assertFalse(threadAlive(thread), "the subscriber thread ended");
        assertEquals(List.of(), subscribers.sources());
        assertEquals(0, index.blocks());
    }

    @Test
    void aReplaySourceThatNeverAnswersTimesOutAndLiveBatchesAreStillApplied() {
        ZMQ.Socket pub = zmq.createSocket(SocketType.PUB);
        int pubPort = pub.bindToRandomPort("tcp://127.0.0.1");
        ZMQ.Socket deaf = zmq.createSocket(SocketType.ROUTER);
        int replayPort = deaf.bindToRandomPort("tcp://127.0.0.1");
        subscribers.start(new SourceId(WORKER, 0), MODEL, new KvEventSource("tcp://127.0.0.1:" + pubPort,
                "tcp://127.0.0.1:" + replayPort, ""));
        long[] seq = {100};
        int[] prompt = Msgpack.tokens(1, 8);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            publish(pub, seq[0]++, Msgpack.batch(Msgpack.stored(new long[] {1, 2}, null, prompt, 4, "GPU")));
            assertEquals(2, index.match(MODEL, BlockKeys.of(prompt, 4, null), List.of(WORKER)).blocks(0, Tier.DEVICE));
        });
        assertTrue(counter("vllm_router_kv_replays_total", "result", "timeout") >= 1);
        assertTrue(counter("vllm_router_kv_sequence_gaps_total") >= 1);

        pub.sendMore(new byte[0]);
        pub.send(Msgpack.batch(Msgpack.cleared()));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                assertEquals(1, counter("vllm_router_kv_event_batches_rejected_total", "reason", "bad_frames")));
        assertEquals(2, index.match(MODEL, BlockKeys.of(prompt, 4, null), List.of(WORKER)).blocks(0, Tier.DEVICE),
                "two frames carry no sequence number: rejected, claims kept");
        publish(pub, seq[0]++, Msgpack.batch(Msgpack.cleared()));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertEquals(0, index.blocks()));
    }

    @Test
    void aStaticSourceWithoutReplayTakesTheBatchAfterAGap() {
        ZMQ.Socket pub = zmq.createSocket(SocketType.PUB);
        int pubPort = pub.bindToRandomPort("tcp://127.0.0.1");
        subscribers.start(new SourceId(WORKER, 0), MODEL, KvEventSource.of("tcp://127.0.0.1:" + pubPort));
        long[] seq = {7};
        int[] prompt = Msgpack.tokens(1, 4);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            publish(pub, seq[0]++, Msgpack.batch(Msgpack.stored(new long[] {1}, null, prompt, 4, "CPU")));
            assertEquals(1, index.match(MODEL, BlockKeys.of(prompt, 4, null), List.of(WORKER)).blocks(0, Tier.HOST));
        });
        assertEquals(1, counter("vllm_router_kv_replays_total", "result", "unavailable"));
    }

    static void publish(ZMQ.Socket pub, long seq, byte[] payload) {
        pub.sendMore(new byte[0]);
        pub.sendMore(ByteBuffer.allocate(8).putLong(seq).array());
        pub.send(payload);
    }
}
