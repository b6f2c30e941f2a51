package org.vllmrouter.kv;

import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * One source's subscriber: a SUB socket on its own thread, frames
 * {@code [topic, seq u64 BE, msgpack batch]} in, claims out.
 *
 * <p>Sequence numbers: the next one is applied; a jump asks the replay socket (a DEALER to
 * the publisher's ROUTER) for everything from the first missing one on, within a deadline,
 * taking replies with or without a topic frame and skipping what was already applied; a
 * number at or below the last one seen live means the publisher started over, so the source's
 * claims are cleared. A malformed batch is rejected whole and counted, and the claims stay: its
 * number is used up (a replay would return the same bytes), while frames too broken to carry a
 * number leave the next batch to look like a gap, which replays.
 */
final class KvSubscriber implements Runnable {

    private static final System.Logger LOG = System.getLogger(KvSubscriber.class.getName());
    private static final long END_OF_REPLAY = -1;
    private static final int POLL_MS = 100;
    /**
     * JeroMQ's connecting side sometimes finishes the TCP connect but never the ZeroMQ handshake
     * (a race in its poller, worse under CPU load); the socket then waits for the handshake
     * timer, 30 s by default, before it reconnects. A short timer makes such a stall cost a
     * second: a subscription that lost batches meanwhile sees a gap and replays, and a replay
     * request queued on a stalled DEALER goes out on the reconnect.
     */
    private static final int HANDSHAKE_MS = 1_000;

    private final ZContext context;
    private final SourceId source;
    private final KvEventSource endpoints;
    private final SourceClaims claims;
    private final BatchApplier applier;
    private final KvMetrics.Source metrics;
    private final KvSubscribers.Settings settings;
    private final byte[] topic;
    private final Map<KvMetrics.Rejection, Long> lastWarning = new EnumMap<>(KvMetrics.Rejection.class);
    private volatile boolean running = true;
    private Long lastFault;
    /** Highest sequence number applied (or used up by a malformed batch); -1 before the first. */
    private long applied = -1;
    /** Highest sequence number seen on the live socket; -1 before the first. */
    private long liveLast = -1;

    KvSubscriber(ZContext context, SourceId source, KvEventSource endpoints, SourceClaims claims,
                 KvMetrics metrics, KvSubscribers.Settings settings) {
        this.context = context;
        this.source = source;
        this.endpoints = endpoints;
        this.claims = claims;
        this.metrics = metrics.source(source);
        this.settings = settings;
        this.applier = new BatchApplier(claims, metrics,
                new EventBatchDecoder(settings.maxPayloadBytes(), settings.maxEvents()));
        this.topic = endpoints.topic().getBytes(StandardCharsets.UTF_8);
    }

    void stop() {
        running = false;
    }

    /** The claims this subscriber keeps up to date. */
    SourceClaims claims() {
        return claims;
    }

    @Override
    public void run() {
        ZMQ.Socket sub = context.createSocket(SocketType.SUB);
        try {
            sub.setLinger(0);
            sub.setHandshakeIvl(HANDSHAKE_MS);
            sub.setRcvHWM(settings.receiveHwm());
            sub.setReceiveTimeOut(POLL_MS);
            sub.setMaxMsgSize(socketLimit());
            sub.subscribe(topic);
            sub.connect(endpoints.endpoint());
            while (running) {
                List<byte[]> frames = receive(sub);
                if (frames != null) {
                    takeIn(frames);
                }
            }
        } catch (RuntimeException e) {
            if (running) {
                LOG.log(Level.ERROR, "KV subscriber for " + source + " stopped", e);
            }
        } finally {
            sub.close();
            claims.close();
        }
    }

    /** One message; a fault of ours must not end the subscription, so it is logged and the next message taken. */
    private void takeIn(List<byte[]> frames) {
        try {
            live(frames);
        } catch (RuntimeException e) {
            long now = System.nanoTime();
            if (lastFault == null || now - lastFault >= settings.warningInterval().toNanos()) {
                lastFault = now;
                LOG.log(Level.ERROR, "KV events from " + source + ": a message could not be taken in", e);
            }
        }
    }

    private void live(List<byte[]> frames) {
        if (frames.size() != 3 || frames.get(1).length != 8) {
            reject(new MalformedBatchException(KvMetrics.Rejection.BAD_FRAMES,
                    frames.size() + " frames, expected [topic, seq, payload]"));
            return;
        }
        if (!topicMatches(frames.get(0))) {
            metrics.topicMismatch.inc();
            return;
        }
        long seq = ByteBuffer.wrap(frames.get(1)).getLong();
        if (liveLast >= 0 && seq <= liveLast) {
            metrics.restart.inc();
            claims.restart();
            LOG.log(Level.INFO, "KV publisher " + source + " started over (seq " + seq + " after " + liveLast
                    + "): its claims are cleared, incarnation " + claims.incarnation());
            applied = -1;
        }
        liveLast = seq;
        if (seq <= applied) {
            metrics.duplicate.inc();
            return;
        }
        if (seq > applied + 1) {
            metrics.gap.inc();
            replay(applied + 1);
            if (seq <= applied) {
                return;
            }
        }
        apply(seq, frames.get(2), false);
    }

    private boolean topicMatches(byte[] received) {
        return topic.length == 0 || Arrays.equals(topic, received);
    }

    private void apply(long seq, byte[] payload, boolean replayed) {
        applied = seq;
        try {
            applier.apply(payload);
            (replayed ? metrics.replayed : metrics.applied).inc();
        } catch (MalformedBatchException e) {
            warn(e, seq);
        }
    }

    private void reject(MalformedBatchException e) {
        metrics.rejected(e.reason());
        warn(e, -1);
    }

    /** At most one line per reason and source per warning interval: a broken publisher must not flood the log. */
    private void warn(MalformedBatchException e, long seq) {
        long now = System.nanoTime();
        Long last = lastWarning.get(e.reason());
        if (last != null && now - last < settings.warningInterval().toNanos()) {
            return;
        }
        lastWarning.put(e.reason(), now);
        LOG.log(Level.WARNING, "KV events from " + source + ": rejected a batch" + (seq >= 0 ? " (seq " + seq + ")" : "")
                + ", claims kept: " + e.reason().label() + ": " + e.getMessage());
    }

    /**
     * ZeroMQ drops the connection of a peer that sends a larger message, unseen by us; up to it
     * an oversized batch reaches the decoder, which rejects and counts it.
     */
    private long socketLimit() {
        return 4L * settings.maxPayloadBytes();
    }

    /** Asks the replay socket for every batch from {@code from} on and applies the new ones. */
    private void replay(long from) {
        if (endpoints.replayEndpoint() == null) {
            metrics.replay("unavailable");
            return;
        }
        long deadline = System.nanoTime() + settings.replayDeadline().toNanos();
        ZMQ.Socket dealer = context.createSocket(SocketType.DEALER);
        try {
            dealer.setLinger(0);
            dealer.setHandshakeIvl(HANDSHAKE_MS);
            dealer.setSendTimeOut(0);
            dealer.setMaxMsgSize(socketLimit());
            dealer.connect(endpoints.replayEndpoint());
            dealer.sendMore(new byte[0]);
            dealer.send(ByteBuffer.allocate(8).putLong(from).array());
            while (running) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    metrics.replay("timeout");
                    LOG.log(Level.WARNING, "KV replay from " + source + " did not finish within "
                            + settings.replayDeadline() + "; going on without the missed batches");
                    return;
                }
                dealer.setReceiveTimeOut((int) Math.min(left, POLL_MS));
                List<byte[]> frames = receive(dealer);
                if (frames == null) {
                    continue;
                }
                // ["", seq, payload] as vLLM answers, or ["", topic, seq, payload].
                int n = frames.size();
                if ((n != 3 && n != 4) || frames.get(0).length != 0 || frames.get(n - 2).length != 8) {
                    metrics.replay("bad_reply");
                    return;
                }
                long seq = ByteBuffer.wrap(frames.get(n - 2)).getLong();
                if (seq == END_OF_REPLAY) {
                    metrics.replay("complete");
                    return;
                }
                if (n == 4 && !topicMatches(frames.get(1))) {
                    metrics.topicMismatch.inc();
                } else if (seq > applied) {
                    apply(seq, frames.get(n - 1), true);
                }
            }
        } finally {
            dealer.close();
        }
    }

    /** A whole multipart message, or null when none arrived within the socket's timeout. */
    private static List<byte[]> receive(ZMQ.Socket socket) {
        byte[] first = socket.recv();
        if (first == null) {
            return null;
        }
        List<byte[]> frames = new ArrayList<>(4);
        frames.add(first);
        while (socket.hasReceiveMore()) {
            frames.add(socket.recv());
        }
        return frames;
    }
}
