package org.vllmrouter.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vllmrouter.discovery.DiscoveryFixtures.registration;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.vllmrouter.core.worker.WorkerRole;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** Registrations over a real ZMQ socket, sent the way vLLM sends them: a DEALER with one msgpack frame per message. */
class ZmqRegistrationSourceTest {
    private final RecordingSink sink = new RecordingSink();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final WorkerReconciler workers = new WorkerReconciler(sink, new DiscoveryMetrics(new PrometheusRegistry()),
            timer, Duration.ofSeconds(1));
    private final ZContext client = new ZContext();
    private final List<String> warnings = new ArrayList<>();
    private final Handler capture = new Handler() {
        @Override
        public void publish(LogRecord record) {
            synchronized (warnings) {
                warnings.add(record.getMessage());
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };
    private ZmqRegistrationSource source;

    @BeforeEach
    void bind() throws Exception {
        Logger.getLogger(ZmqRegistrationSource.class.getName()).addHandler(capture);
        source = ZmqRegistrationSource.start("127.0.0.1:*", workers);
    }

    @AfterEach
    void stop() {
        Logger.getLogger(ZmqRegistrationSource.class.getName()).removeHandler(capture);
        source.close();
        workers.close();
        timer.shutdownNow();
        client.close();
    }

    private ZMQ.Socket dealer() {
        ZMQ.Socket dealer = client.createSocket(SocketType.DEALER);
        dealer.setLinger(0);
        dealer.connect(source.endpoint());
        return dealer;
    }

    private static byte[] arrayOfOne() throws IOException {
        try (MessageBufferPacker packer = MessagePack.newDefaultBufferPacker()) {
            packer.packArrayHeader(1).packString("P");
            return packer.toByteArray();
        }
    }

    @Test
    void instancesStayWhileTheyHeartbeatAndExpireWhenTheyStop() throws Exception {
        ZMQ.Socket prefill = dealer();
        ZMQ.Socket decode = dealer();
        prefill.send(registration("P", "127.0.0.1:8100"));
        decode.send(registration("D", "http://127.0.0.1:8200"));
        Eventually.await("both registered", () -> sink.registered.size() == 2, () -> sink.registered);
        assertEquals(WorkerRole.PREFILL, sink.registered.get("http://127.0.0.1:8100").role());
        assertEquals(WorkerRole.DECODE, sink.registered.get("http://127.0.0.1:8200").role());

        // Heartbeats for longer than the expiry keep both.
        long until = System.nanoTime() + ZmqRegistrationSource.EXPIRY.plusSeconds(2).toNanos();
        while (System.nanoTime() - until < 0) {
            prefill.send(registration("P", "127.0.0.1:8100"));
            decode.send(registration("D", "http://127.0.0.1:8200"));
            Thread.sleep(1000);
            assertEquals(2, sink.registered.size(), sink.registered::toString);
        }

        // The decode instance stops; only it expires.
        decode.close();
        byte[] heartbeat = registration("P", "127.0.0.1:8100");
        Eventually.await("decode expired", () -> {
            prefill.send(heartbeat);
            return !sink.registered.containsKey("http://127.0.0.1:8200");
        }, () -> sink.registered);
        assertTrue(sink.registered.containsKey("http://127.0.0.1:8100"));
        prefill.close();
        Eventually.await("prefill expired", sink.registered::isEmpty);
    }

    @Test
    void badMessagesAreSkippedWithOneWarningAndChangeNothing() throws Exception {
        ZMQ.Socket dealer = dealer();
        List<byte[]> bad = List.of(
                "not msgpack at all".getBytes(StandardCharsets.UTF_8),
                new byte[0],
                new byte[] {(byte) 0xc1},
                registration(Map.of("type", "P", "http_address", "127.0.0.1:8100")),
                registration(Map.of("type", "X", "http_address", "127.0.0.1:8100", "zmq_address", "z:1")),
                registration(Map.of("type", "P", "http_address", 8100, "zmq_address", "z:1")),
                registration(Map.of("type", "D", "http_address", "no port", "zmq_address", "z:1")),
                arrayOfOne());
        for (int i = 0; i < 50; i++) {
            for (byte[] message : bad) {
                dealer.send(message);
            }
        }
        dealer.send(registration("D", "127.0.0.1:8300"));
        Eventually.await("the good registration", () -> sink.registered.size() == 1, () -> sink.registered);
        assertEquals(WorkerRole.DECODE, sink.registered.get("http://127.0.0.1:8300").role());
        synchronized (warnings) {
            List<String> skipped = warnings.stream().filter(w -> w.contains("skipped")).toList();
            assertEquals(1, skipped.size(), skipped::toString);
            assertTrue(skipped.get(0).contains("skipped a message that is not a registration: "), skipped::toString);
        }
    }

    @Test
    void decodeSaysWhatIsWrong() throws Exception {
        assertEquals("missing field 'zmq_address'", assertThrows(Registration.Invalid.class, () -> Registration.decode(
                registration(Map.of("type", "P", "http_address", "h:1")))).getMessage());
        assertEquals("field 'type' must be \"P\" or \"D\", got \"X\"", assertThrows(Registration.Invalid.class,
                () -> Registration.decode(registration(Map.of("type", "X", "http_address", "h:1",
                        "zmq_address", "z:1")))).getMessage());
        assertEquals("field 'http_address' must be a non-empty string, got 8100", assertThrows(Registration.Invalid.class,
                () -> Registration.decode(registration(Map.of("type", "P", "http_address", 8100,
                        "zmq_address", "z:1")))).getMessage());
        assertEquals("trailing bytes after the msgpack map", assertThrows(Registration.Invalid.class, () -> {
            byte[] one = registration("P", "h:1");
            byte[] two = new byte[one.length * 2];
            System.arraycopy(one, 0, two, 0, one.length);
            System.arraycopy(one, 0, two, one.length, one.length);
            Registration.decode(two);
        }).getMessage());
        assertEquals(new Registration(WorkerRole.PREFILL, "http://[::1]:8100", "127.0.0.1:21001"),
                Registration.decode(registration("P", "[::1]:8100")));
    }

    @Test
    void aTakenAddressIsAStartError() {
        String taken = source.endpoint().substring("tcp://".length());
        DiscoveryStartException e = assertThrows(DiscoveryStartException.class,
                () -> ZmqRegistrationSource.start(taken, workers));
        assertTrue(e.getMessage().startsWith("Failed to bind the vLLM discovery address " + taken), e.getMessage());
    }
}
