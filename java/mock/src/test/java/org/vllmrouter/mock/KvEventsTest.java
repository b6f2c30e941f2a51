package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** The KV-event publisher, read with a plain ZeroMQ SUB socket and a generic msgpack reader. */
class KvEventsTest {

    /** One received message: its topic, sequence number and decoded batch. */
    record Message(String topic, long seq, List<Map<String, Value>> events, byte[] payload) {}

    static MockWorkers start(Consumer<Knobs> knobs) {
        return MockWorkers.start(MockConfig.builder().count(1).all(k -> knobs.accept(k.kvEvents(true).blockSize(4))).build());
    }

    static String prompt(int tokens) {
        return "abc".repeat(tokens);
    }

    /**
     * A SUB socket connected to {@code worker}, ready: a probe request's batch has arrived on it.
     * JeroMQ's connecting side now and then never finishes the ZeroMQ handshake and waits for
     * the handshake timer to reconnect; a short timer keeps that under a second.
     */
    static ZMQ.Socket subscribe(ZContext ctx, MockWorker worker) throws Exception {
        ZMQ.Socket sub = ctx.createSocket(SocketType.SUB);
        sub.setHandshakeIvl(300);
        sub.subscribe(new byte[0]);
        sub.setReceiveTimeOut(200);
        sub.connect(worker.kvEvents().endpoint());
        // A slow joiner misses what is sent before its subscription reaches the publisher.
        for (int i = 0; i < 100; i++) {
            Http.post(worker.url() + "/v1/completions", "{\"prompt\":\"probe " + i + " " + prompt(8) + "\"}");
            if (receive(sub) != null) {
                while (receive(sub) != null) {
                    // Drop what the earlier probes sent.
                }
                return sub;
            }
        }
        throw new AssertionError("no KV event reached the subscriber");
    }

    static Message receive(ZMQ.Socket sub) throws IOException {
        byte[] topic = sub.recv();
        if (topic == null) {
            return null;
        }
        byte[] seq = sub.recv();
        byte[] payload = sub.recv();
        return new Message(new String(topic), ByteBuffer.wrap(seq).getLong(), events(payload), payload);
    }

    static Message next(ZMQ.Socket sub) throws IOException {
        for (int i = 0; i < 50; i++) {
            Message m = receive(sub);
            if (m != null) {
                return m;
            }
        }
        throw new AssertionError("no KV event batch");
    }

    static List<Map<String, Value>> events(byte[] payload) throws IOException {
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            Value batch = u.unpackValue();
            if (!batch.isArrayValue()) {
                return null;
            }
            assertEquals(3, batch.asArrayValue().size(), "[ts, events, data_parallel_rank]");
            assertTrue(batch.asArrayValue().get(0).isFloatValue());
            assertEquals(0, batch.asArrayValue().get(2).asIntegerValue().asInt());
            List<Map<String, Value>> out = new ArrayList<>();
            for (Value e : batch.asArrayValue().get(1).asArrayValue()) {
                Map<String, Value> fields = new HashMap<>();
                e.asMapValue().map().forEach((k, v) -> fields.put(k.asStringValue().asString(), v));
                out.add(fields);
            }
            return out;
        } catch (org.msgpack.core.MessagePackException e) {
            return null;
        }
    }

    static String type(Map<String, Value> event) {
        return event.get("type").asStringValue().asString();
    }

    static long[] hashes(Map<String, Value> event) {
        List<Value> list = event.get("block_hashes").asArrayValue().list();
        long[] out = new long[list.size()];
        for (int i = 0; i < out.length; i++) {
            Value v = list.get(i);
            out[i] = v.isBinaryValue() ? ByteBuffer.wrap(v.asBinaryValue().asByteArray(), 24, 8).getLong()
                    : v.asIntegerValue().toBigInteger().longValue();
        }
        return out;
    }

    static int[] tokenIds(Map<String, Value> event) {
        return event.get("token_ids").asArrayValue().list().stream().mapToInt(v -> (int) v.asIntegerValue().toLong()).toArray();
    }

    static int[] rendered(MockWorker w, String prompt) throws Exception {
        JsonNode list = Http.json(Http.post(w.url() + "/v1/completions/render",
                "{\"model\":\"m\",\"prompt\":\"" + prompt + "\",\"max_tokens\":5,\"temperature\":0.5}"));
        assertEquals(1, list.size());
        JsonNode r = list.get(0);
        assertTrue(r.get("request_id").asText().startsWith("cmpl-render-"));
        assertEquals("m", r.get("model").asText());
        assertEquals(5, r.get("sampling_params").get("max_tokens").asInt());
        assertEquals(0.5, r.get("sampling_params").get("temperature").asDouble());
        int[] ids = new int[r.get("token_ids").size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = r.get("token_ids").get(i).asInt();
        }
        return ids;
    }

    @Test
    void aRequestPublishesTheRenderedTokensOfItsNewBlocksThenAResetClears() throws Exception {
        try (MockWorkers mock = start(k -> {}); ZContext ctx = new ZContext()) {
            MockWorker w = mock.worker(0);
            ZMQ.Socket sub = subscribe(ctx, w);
            String prompt = prompt(13);
            Http.post(w.url() + "/v1/completions", "{\"prompt\":\"" + prompt + "\"}");
            Message m = next(sub);
            assertEquals("", m.topic());
            Map<String, Value> stored = m.events().get(0);
            assertEquals("BlockStored", type(stored));
            assertEquals(3, hashes(stored).length, "12 of 13 tokens fill 3 blocks of 4; the last token is computed");
            assertTrue(stored.get("parent_block_hash").isNilValue());
            assertArrayEquals(java.util.Arrays.copyOf(rendered(w, prompt), 12), tokenIds(stored));
            assertEquals("GPU", stored.get("medium").asStringValue().asString());
            assertEquals(4, stored.get("block_size").asIntegerValue().asInt());
            for (String field : List.of("lora_id", "lora_name")) {
                assertTrue(stored.get(field).isNilValue(), field);
            }

            Http.post(w.url() + "/v1/completions", "{\"prompt\":\"" + prompt + "abcabcabcabcabcabc\"}");
            Message more = next(sub);
            assertEquals(m.seq() + 1, more.seq());
            Map<String, Value> child = more.events().get(0);
            assertEquals(hashes(stored)[2], child.get("parent_block_hash").asIntegerValue().toBigInteger().longValue(),
                    "the new blocks follow the cached ones");

            Http.post(w.url() + "/reset_prefix_cache", "");
            assertEquals(List.of("AllBlocksCleared"), next(sub).events().stream().map(KvEventsTest::type).toList());
        }
    }

    @Test
    void evictionRemovesFromTheGpuIntoTheCpuTierThenOut() throws Exception {
        try (MockWorkers mock = start(k -> k.cacheBlocks(2).cpuCacheBlocks(1)); ZContext ctx = new ZContext()) {
            MockWorker w = mock.worker(0);
            ZMQ.Socket sub = subscribe(ctx, w);
            Http.post(w.url() + "/reset_prefix_cache", "");
            next(sub);
            Http.post(w.url() + "/v1/completions", "{\"prompt\":\"" + prompt(9) + "\"}");
            Message first = next(sub);
            long[] firstBlocks = hashes(first.events().get(0));
            assertEquals(2, firstBlocks.length);
            Http.post(w.url() + "/v1/completions", "{\"prompt\":\"xyz" + prompt(4) + "\"}");
            List<Map<String, Value>> events = next(sub).events();
            assertEquals(List.of("BlockStored", "BlockRemoved", "BlockStored"), events.stream().map(KvEventsTest::type).toList());
            assertArrayEquals(new long[] {firstBlocks[1]}, hashes(events.get(1)), "the end of the old prompt goes first");
            assertEquals("GPU", events.get(1).get("medium").asStringValue().asString());
            assertArrayEquals(new long[] {firstBlocks[1]}, hashes(events.get(2)));
            assertEquals("CPU", events.get(2).get("medium").asStringValue().asString());
            assertEquals(firstBlocks[0], events.get(2).get("parent_block_hash").asIntegerValue().toBigInteger().longValue());

            Http.post(w.url() + "/v1/completions", "{\"prompt\":\"zzz" + prompt(4) + "\"}");
            events = next(sub).events();
            assertEquals(List.of("BlockStored", "BlockRemoved", "BlockStored", "BlockRemoved"),
                    events.stream().map(KvEventsTest::type).toList());
            assertArrayEquals(new long[] {firstBlocks[0]}, hashes(events.get(1)));
            assertArrayEquals(new long[] {firstBlocks[1]}, hashes(events.get(3)), "the CPU tier holds one block");
            assertEquals("CPU", events.get(3).get("medium").asStringValue().asString());
            assertEquals(2, w.cacheBlocks());
            assertEquals(1, w.cpuCacheBlocks());
        }
    }

    @Test
    void aGapIsReplayedWithOrWithoutATopicFrame() throws Exception {
        for (boolean topicFrame : new boolean[] {false, true}) {
            try (MockWorkers mock = start(k -> k.kvTopic("kv").kvReplayTopicFrame(topicFrame)); ZContext ctx = new ZContext()) {
                MockWorker w = mock.worker(0);
                ZMQ.Socket sub = subscribe(ctx, w);
                w.knobs().kvDropNext(1);
                Http.post(w.url() + "/v1/completions", "{\"prompt\":\"one " + prompt(8) + "\"}");
                Http.post(w.url() + "/v1/completions", "{\"prompt\":\"two " + prompt(8) + "\"}");
                Message after = next(sub);
                assertEquals("kv", after.topic());
                long missing = after.seq() - 1;

                ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
                dealer.setReceiveTimeOut(5_000);
                dealer.setHandshakeIvl(300);
                dealer.connect(w.kvEvents().replayEndpoint());
                dealer.sendMore(new byte[0]);
                dealer.send(ByteBuffer.allocate(8).putLong(missing).array());
                List<Long> seqs = new ArrayList<>();
                while (true) {
                    List<byte[]> frames = new ArrayList<>();
                    frames.add(dealer.recv());
                    assertNotNull(frames.get(0), "replay answered");
                    while (dealer.hasReceiveMore()) {
                        frames.add(dealer.recv());
                    }
                    assertEquals(topicFrame ? 4 : 3, frames.size());
                    assertEquals(0, frames.get(0).length);
                    if (topicFrame) {
                        assertEquals("kv", new String(frames.get(1)));
                    }
                    long seq = ByteBuffer.wrap(frames.get(frames.size() - 2)).getLong();
                    if (seq == -1) {
                        assertEquals(0, frames.get(frames.size() - 1).length);
                        break;
                    }
                    seqs.add(seq);
                }
                assertEquals(List.of(missing, after.seq()), seqs);
            }
        }
    }

    @Test
    void faultKnobsSendAMalformedBatchAndRestartTheNumbering() throws Exception {
        try (MockWorkers mock = start(k -> k.kvHashBytes(true)); ZContext ctx = new ZContext()) {
            MockWorker w = mock.worker(0);
            ZMQ.Socket sub = subscribe(ctx, w);
            w.knobs().kvMalformedNext(1);
            Http.post(w.url() + "/v1/completions", "{\"prompt\":\"" + prompt(9) + "\"}");
            Message bad = next(sub);
            assertNull(bad.events(), "not msgpack");
            Message good = next(sub);
            assertEquals(bad.seq() + 1, good.seq());
            assertTrue(good.events().get(0).get("block_hashes").asArrayValue().get(0).isBinaryValue());
            assertEquals(32, good.events().get(0).get("block_hashes").asArrayValue().get(0).asBinaryValue().asByteArray().length);

            w.knobs().kvRestartNext(true);
            Http.post(w.url() + "/v1/completions", "{\"prompt\":\"" + prompt(9) + "\"}");
            Message restarted = next(sub);
            assertEquals(0, restarted.seq());
            assertEquals("BlockStored", type(restarted.events().get(0)), "a restarted worker's cache is empty");
            assertEquals(2, w.cacheBlocks());
        }
    }

    @Test
    void infoRoutesNameTheSourcesAndTheBlockSize() throws Exception {
        try (MockWorkers mock = start(k -> k.kvTopic("t")); MockWorkers quiet = MockWorkers.start(MockConfig.single())) {
            MockWorker w = mock.worker(0);
            JsonNode sources = Http.json(Http.get(w.url() + "/kv_event_sources"));
            JsonNode rank0 = sources.get("0");
            assertEquals(w.kvEvents().endpoint(), rank0.get("endpoint").asText());
            assertEquals(w.kvEvents().replayEndpoint(), rank0.get("replay_endpoint").asText());
            assertEquals("t", rank0.get("topic").asText());
            assertEquals("zmq", rank0.get("publisher").asText());
            assertEquals("msgpack", rank0.get("encoding").asText());
            assertTrue(rank0.get("enable_kv_cache_events").asBoolean());
            assertEquals(1, rank0.get("schema_version").asInt());
            assertEquals(100_000, rank0.get("hwm").asInt());
            assertEquals(10_000, rank0.get("buffer_steps").asInt());
            JsonNode info = Http.json(Http.get(w.url() + "/get_server_info"));
            assertEquals("mock", info.get("model_id").asText());
            assertEquals("mock", info.get("model_path").asText());
            assertEquals(w.id(), info.get("instance_id").asText());
            assertEquals(4, info.get("kv_block_size").asInt());
            assertEquals(4, info.get("effective_attention_block_size").asInt());

            assertEquals(0, Http.json(Http.get(quiet.urls().get(0) + "/kv_event_sources")).size());
            assertNull(quiet.worker(0).kvEvents());
        }
    }

    @Test
    void chatRenderGivesTheTokensTheChatRouteCaches() throws Exception {
        try (MockWorkers mock = start(k -> {})) {
            MockWorker w = mock.worker(0);
            String messages = "[{\"role\":\"user\",\"content\":\"" + prompt(20) + "\"}]";
            JsonNode r = Http.json(Http.post(w.url() + "/v1/chat/completions/render",
                    "{\"model\":\"m\",\"messages\":" + messages + ",\"max_completion_tokens\":7}"));
            assertTrue(r.get("request_id").asText().startsWith("chatcmpl-render-"));
            assertEquals(7, r.get("sampling_params").get("max_tokens").asInt());
            assertTrue(r.get("features").isNull());
            int tokens = r.get("token_ids").size();
            Http.post(w.url() + "/v1/chat/completions", "{\"messages\":" + messages + "}");
            JsonNode again = Http.json(Http.post(w.url() + "/v1/chat/completions", "{\"messages\":" + messages + "}"));
            assertEquals((tokens - 1) / 4 * 4, again.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt());
            assertEquals(tokens, again.get("usage").get("prompt_tokens").asInt());
        }
    }

    @Test
    void completionsRenderAnswersOnePerPromptOfABatch() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.single())) {
            JsonNode list = Http.json(Http.post(mock.urls().get(0) + "/v1/completions/render",
                    "{\"prompt\":[\"ab\",\"abcdef\"]}"));
            assertEquals(2, list.size());
            assertEquals(1, list.get(0).get("token_ids").size());
            assertEquals(2, list.get(1).get("token_ids").size());
            assertEquals(16, list.get(0).get("sampling_params").get("max_tokens").asInt());
            assertEquals("mock", list.get(0).get("model").asText());
            assertEquals(400, Http.post(mock.urls().get(0) + "/v1/completions/render", "{}").statusCode());
        }
    }
}
