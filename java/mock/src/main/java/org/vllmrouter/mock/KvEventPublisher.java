package org.vllmrouter.mock;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A worker's KV-event publisher, as vLLM's {@code ZmqEventPublisher} behaves: a PUB socket
 * sending {@code [topic, seq u64 BE, msgpack batch]} with {@code seq} from 0 per publisher
 * lifetime, and a ROUTER socket that answers {@code ["", start_seq]} with
 * {@code ["", seq, batch]} for every buffered batch from {@code start_seq} on, then
 * {@code ["", -1, ""]} (with {@code kv-replay-topic-frame}, a topic frame follows the empty
 * one, as some publishers send). The sockets belong to one thread; other threads hand it
 * batches through a queue.
 *
 * <p>Faults, read as each batch goes out: {@code kv-malformed-next N} sends N undecodable
 * batches (each before a real one, with its own sequence number), {@code kv-drop-next N}
 * numbers and buffers the next N batches but does not send them (a gap that replay repairs).
 * A restart ({@code kv-restart-next}) starts numbering again at 0 with an empty buffer.
 */
public final class KvEventPublisher implements AutoCloseable {

    /** vLLM's defaults ({@code KVEventsConfig}). */
    static final int HWM = 100_000;
    static final int BUFFER_STEPS = 10_000;

    /** Bytes no msgpack decoder accepts: 0xc1 is a reserved type byte. */
    static final byte[] MALFORMED = {(byte) 0xc1, (byte) 0xc1, 0x00};

    private static final byte[] END_OF_REPLAY = ByteBuffer.allocate(8).putLong(-1).array();
    private static final Object RESTART = new Object();
    private static final int POLL_MS = 2;

    private final ZContext context;
    private final Knobs knobs;
    private final int rank;
    private final String host;
    private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final ArrayDeque<Buffered> buffer = new ArrayDeque<>();
    private final Thread thread;
    private final int port;
    private final int replayPort;
    private final byte[] topic;
    private volatile boolean running = true;
    private long nextSeq;

    private record Buffered(long seq, byte[] payload) {}

    private record Raw(byte[] payload) {}

    KvEventPublisher(ZContext context, String host, Knobs knobs, int rank) {
        this.context = context;
        this.knobs = knobs;
        this.rank = rank;
        this.host = host;
        this.topic = knobs.kvTopic().getBytes(StandardCharsets.UTF_8);
        CompletableFuture<int[]> bound = new CompletableFuture<>();
        thread = Thread.ofPlatform().name("mock-kv-publisher").daemon().start(() -> run(bound));
        int[] ports = bound.join();
        port = ports[0];
        replayPort = ports[1];
    }

    /** {@code tcp://HOST:PORT} of the PUB socket. */
    public String endpoint() {
        return "tcp://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    /** {@code tcp://HOST:PORT} of the replay ROUTER socket. */
    public String replayEndpoint() {
        return "tcp://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + replayPort;
    }

    public String topic() {
        return knobs.kvTopic();
    }

    /** Sends {@code payload} as a batch of its own, whatever it holds: for malformed-input tests. */
    public void publishRaw(byte[] payload) {
        queue.add(new Raw(payload));
    }

    void publish(List<KvEvent> events) {
        queue.add(events);
    }

    /** Starts a new publisher lifetime: numbering from 0, nothing to replay. */
    void restart() {
        queue.add(RESTART);
    }

    @Override
    public void close() {
        running = false;
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The thread that owns both sockets: binds them, then sends batches and answers replays. */
    private void run(CompletableFuture<int[]> bound) {
        ZMQ.Socket pub = context.createSocket(SocketType.PUB);
        ZMQ.Socket router = context.createSocket(SocketType.ROUTER);
        try {
            boolean ipv6 = host.contains(":");
            String bindHost = "tcp://" + (ipv6 ? "[" + host + "]" : host);
            pub.setIPv6(ipv6);
            router.setIPv6(ipv6);
            pub.setSndHWM(HWM);
            pub.setLinger(0);
            router.setLinger(0);
            bound.complete(new int[] {pub.bindToRandomPort(bindHost), router.bindToRandomPort(bindHost)});
            while (running) {
                Object item = queue.poll(POLL_MS, TimeUnit.MILLISECONDS);
                while (item != null) {
                    send(pub, item);
                    item = queue.poll();
                }
                answerReplays(router);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            bound.completeExceptionally(e);
            throw e;
        } finally {
            pub.close();
            router.close();
        }
    }

    @SuppressWarnings("unchecked")
    private void send(ZMQ.Socket pub, Object item) {
        if (item == RESTART) {
            nextSeq = 0;
            buffer.clear();
            return;
        }
        if (item instanceof Raw raw) {
            sendBatch(pub, raw.payload());
            return;
        }
        int malformed = knobs.kvMalformedNext();
        if (malformed > 0) {
            knobs.kvMalformedNext(malformed - 1);
            sendBatch(pub, MALFORMED);
        }
        sendBatch(pub, encode((List<KvEvent>) item));
    }

    private void sendBatch(ZMQ.Socket pub, byte[] payload) {
        long seq = nextSeq++;
        buffer.addLast(new Buffered(seq, payload));
        if (buffer.size() > BUFFER_STEPS) {
            buffer.removeFirst();
        }
        int drop = knobs.kvDropNext();
        if (drop > 0) {
            knobs.kvDropNext(drop - 1);
            return;
        }
        pub.sendMore(topic);
        pub.sendMore(seqBytes(seq));
        pub.send(payload);
    }

    private void answerReplays(ZMQ.Socket router) {
        byte[] identity;
        while ((identity = router.recv(ZMQ.DONTWAIT)) != null) {
            byte[] delimiter = router.hasReceiveMore() ? router.recv() : null;
            byte[] start = router.hasReceiveMore() ? router.recv() : null;
            while (router.hasReceiveMore()) {
                router.recv();
            }
            if (delimiter == null || start == null || start.length != 8) {
                continue;
            }
            long from = ByteBuffer.wrap(start).getLong();
            for (Buffered b : buffer) {
                if (b.seq() >= from) {
                    reply(router, identity, seqBytes(b.seq()), b.payload());
                }
            }
            reply(router, identity, END_OF_REPLAY, new byte[0]);
        }
    }

    private void reply(ZMQ.Socket router, byte[] identity, byte[] seq, byte[] payload) {
        router.sendMore(identity);
        router.sendMore(new byte[0]);
        if (knobs.kvReplayTopicFrame()) {
            router.sendMore(topic);
        }
        router.sendMore(seq);
        router.send(payload);
    }

    private static byte[] seqBytes(long seq) {
        return ByteBuffer.allocate(8).putLong(seq).array();
    }

    /** {@code [ts, [event...], rank]}, events as maps tagged by {@code type}, as vLLM encodes them. */
    private byte[] encode(List<KvEvent> events) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3);
            p.packDouble(System.currentTimeMillis() / 1000.0);
            p.packArrayHeader(events.size());
            for (KvEvent e : events) {
                switch (e) {
                    case KvEvent.Stored s -> {
                        p.packMapHeader(9);
                        p.packString("type").packString("BlockStored");
                        p.packString("block_hashes");
                        hashes(p, s.hashes());
                        p.packString("parent_block_hash");
                        if (s.parent() == null) {
                            p.packNil();
                        } else {
                            hash(p, s.parent());
                        }
                        p.packString("token_ids").packArrayHeader(s.tokens().length);
                        for (int t : s.tokens()) {
                            p.packLong(Integer.toUnsignedLong(t));
                        }
                        p.packString("block_size").packInt(s.blockSize());
                        p.packString("lora_id").packNil();
                        p.packString("medium").packString(s.medium());
                        p.packString("lora_name").packNil();
                        p.packString("group_idx").packInt(0);
                    }
                    case KvEvent.Removed r -> {
                        p.packMapHeader(4);
                        p.packString("type").packString("BlockRemoved");
                        p.packString("block_hashes");
                        hashes(p, r.hashes());
                        p.packString("medium").packString(r.medium());
                        p.packString("group_idx").packInt(0);
                    }
                    case KvEvent.Cleared c -> {
                        p.packMapHeader(1);
                        p.packString("type").packString("AllBlocksCleared");
                    }
                }
            }
            p.packInt(rank);
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void hashes(MessageBufferPacker p, long[] hashes) throws IOException {
        p.packArrayHeader(hashes.length);
        for (long h : hashes) {
            hash(p, h);
        }
    }

    /**
     * vLLM's two hash forms: a u64 (its default), or with {@code kv-hash-bytes} a 32-byte digest
     * whose last 8 bytes are that u64, as vLLM's int form is cut from its digest.
     */
    private void hash(MessageBufferPacker p, long h) throws IOException {
        if (knobs.kvHashBytes()) {
            ByteBuffer digest = ByteBuffer.allocate(32);
            digest.putLong(~h).putLong(h * 31).putLong(h >>> 7);
            digest.putLong(h);
            p.packBinaryHeader(32);
            p.writePayload(digest.array());
        } else if (h < 0) {
            p.packBigInteger(new BigInteger(Long.toUnsignedString(h)));
        } else {
            p.packLong(h);
        }
    }
}
