package org.vllmrouter.discovery;

import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.logging.Logger;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;
import org.zeromq.ZMsg;

/**
 * Workers from vLLM's ZMQ registrations (PD mode): a ROUTER socket bound at {@code --vllm-discovery-address}
 * receives msgpack {@link Registration}s; each one registers or refreshes its instance, which stays a worker until
 * {@link #EXPIRY} passes without another. A message that is not a registration is skipped with a rate-limited
 * warning and changes nothing. One thread owns the socket (ZMQ sockets are not thread-safe).
 */
final class ZmqRegistrationSource implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(ZmqRegistrationSource.class.getName());
    static final Duration EXPIRY = Duration.ofSeconds(5);
    private static final int POLL_MILLIS = 200;

    private final ZContext context;
    private final ZMQ.Socket socket;
    private final String endpoint;
    private final WorkerReconciler workers;
    private final RateLimitedLog badMessages = new RateLimitedLog(LOG, Duration.ofSeconds(10));
    /** Last heartbeat (System.nanoTime) per registered URL; touched by the socket thread only. */
    private final Map<String, Long> lastSeen = new HashMap<>();
    private final Thread thread;
    private volatile boolean running = true;

    private ZmqRegistrationSource(ZContext context, ZMQ.Socket socket, WorkerReconciler workers) {
        this.context = context;
        this.socket = socket;
        this.endpoint = socket.getLastEndpoint();
        this.workers = workers;
        this.thread = new Thread(this::run, "vllm-router-zmq-discovery");
        this.thread.setDaemon(true);
    }

    /** Binds {@code address} ({@code HOST:PORT}) and starts receiving. */
    static ZmqRegistrationSource start(String address, WorkerReconciler workers) throws DiscoveryStartException {
        ZContext context = new ZContext();
        try {
            ZMQ.Socket socket = context.createSocket(SocketType.ROUTER);
            socket.setLinger(0);
            socket.setIPv6(address.startsWith("["));
            socket.bind("tcp://" + address);
            ZmqRegistrationSource source = new ZmqRegistrationSource(context, socket, workers);
            source.thread.start();
            LOG.info("vLLM discovery: waiting for registrations on " + source.endpoint);
            return source;
        } catch (ZMQException | IllegalArgumentException e) {
            context.close();
            throw new DiscoveryStartException("Failed to bind the vLLM discovery address " + address + ": "
                    + e.getMessage(), e);
        }
    }

    /** The bound endpoint, e.g. {@code tcp://0.0.0.0:30001}. */
    String endpoint() {
        return endpoint;
    }

    private void run() {
        try (ZMQ.Poller poller = context.createPoller(1)) {
            poller.register(socket, ZMQ.Poller.POLLIN);
            while (running) {
                poller.poll(POLL_MILLIS);
                ZMsg message;
                while (running && (message = ZMsg.recvMsg(socket, ZMQ.DONTWAIT)) != null) {
                    received(message);
                }
                expire(System.nanoTime());
            }
        } catch (RuntimeException e) {
            if (running) {
                LOG.severe("vLLM discovery stopped: " + e);
            }
        } finally {
            context.close();
        }
    }

    /** ROUTER frames: the sender's identity, then the payload (after an empty delimiter from a REQ socket). */
    private void received(ZMsg message) {
        byte[] payload = message.size() >= 2 ? message.getLast().getData() : null;
        if (payload == null) {
            badMessages.warning("vLLM discovery: skipped a message without a payload frame");
            return;
        }
        Registration registration;
        try {
            registration = Registration.decode(payload);
        } catch (Registration.Invalid e) {
            badMessages.warning("vLLM discovery: skipped a message that is not a registration: " + e.getMessage());
            return;
        }
        if (lastSeen.put(registration.url(), System.nanoTime()) == null) {
            LOG.info("vLLM discovery: " + (registration.role() == org.vllmrouter.core.worker.WorkerRole.PREFILL
                    ? "prefill" : "decode") + " instance " + registration.url() + " registered (zmq "
                    + registration.zmqAddress() + ")");
        }
        workers.want(new Endpoint(registration.url(), registration.role(), null));
    }

    private void expire(long now) {
        long expiry = EXPIRY.toNanos();
        for (Iterator<Map.Entry<String, Long>> it = lastSeen.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Long> entry = it.next();
            if (now - entry.getValue() > expiry) {
                it.remove();
                LOG.info("vLLM discovery: instance " + entry.getKey() + " expired (no heartbeat for "
                        + EXPIRY.toSeconds() + " s)");
                workers.unwant(entry.getKey());
            }
        }
    }

    @Override
    public void close() {
        running = false;
        try {
            thread.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
