package org.vllmrouter.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.TrackingArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.push.PushMessage;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.session.SessionStore;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionStoreUrl;
import org.vllmrouter.core.session.SessionTable;

/**
 * Sticky sessions in Redis, shared by every router replica that names the same store. One RESP3 connection
 * carries the scripts that bind sessions (each a single atomic step on the server) and the invalidations that
 * keep each table's near cache right ({@code CLIENT TRACKING} in broadcast mode over the binding keys), so a
 * later request of a known session costs no round trip. A background thread writes last uses back once a
 * second, refreshes the counters and, after the store failed, reconciles what this router decided on its own.
 *
 * <p>When the store does not answer within the routing timeout, or the connection drops, the store is degraded:
 * routing goes on from this router's own view (its near cache and last known counts), new bindings are kept in
 * a journal, releases are remembered; once the store answers again the releases are replayed and the journal is
 * adopted (a binding the store already holds wins), so no count goes negative or stays behind. A pool whose
 * data the store lost (its epoch changed, e.g. a restart without persistence) gets every binding this router
 * knows back. From the moment that reconciling is done, routing asks the store again and never serves a binding
 * this router made on its own: its session's next turn goes where the store says, on every replica alike.
 */
public final class RedisSessionStore implements SessionStore {
    private static final Logger LOG = Logger.getLogger(RedisSessionStore.class.getName());

    /** How long a routing call waits for the store before it decides on its own and marks the store degraded. */
    static final Duration ROUTE_TIMEOUT = Duration.ofSeconds(1);
    /** How often last uses are written back and the counters refreshed; also the store's reconnect probe. */
    static final Duration SYNC_INTERVAL = Duration.ofSeconds(1);
    /** Bound of background calls (write-back, reconciling) and of the connection attempt at start. */
    static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(5);
    private static final int[] MIN_VERSION = {6, 2};

    private static final TrackingArgs TRACKING =
            TrackingArgs.Builder.enabled().bcast().prefixes(Keys.BINDING_PREFIX).noloop();

    private final String description;
    private final long ttlMillis;
    private final LongSupplier clockMillis;
    private final ClientResources resources;
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private final Scripts scripts;
    private final ConcurrentHashMap<String, RedisSessionTable> tables = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, RedisSessionTable.Pool> poolsByTag = new ConcurrentHashMap<>();
    private final ScheduledExecutorService background;
    /** Guards {@link #failures} and the changes of {@link #degraded} and {@link #offline}. */
    private final Object health = new Object();
    /** Counts failures; a recovery changes the flags below only when none happened since it began. */
    private long failures;
    /** From a failure until a recovery is complete: what {@code /sessions} and the metric report. */
    private volatile boolean degraded;
    /** From a failure until a recovery has reconciled: routing decides on this router's own view meanwhile. */
    private volatile boolean offline;
    private volatile boolean closed;

    private RedisSessionStore(String description, Duration ttl, LongSupplier clockMillis, ClientResources resources,
                              RedisClient client, StatefulRedisConnection<String, String> connection) {
        this.description = description;
        this.ttlMillis = ttl.toMillis();
        this.clockMillis = clockMillis;
        this.resources = resources;
        this.client = client;
        this.connection = connection;
        this.scripts = new Scripts(connection);
        this.background = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "vllm-router-session-store");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Connects to the store at {@code url} (checked by {@link SessionStoreUrl#problem}) and starts its background
     * thread. Session times come from {@code clockMillis} (milliseconds; every replica's clock must agree to well
     * within the TTL).
     */
    static RedisSessionStore open(String url, Duration ttl, LongSupplier clockMillis) throws SessionStoreException {
        String shown = UrlRedaction.redact(url);
        RedisURI uri;
        try {
            uri = RedisURI.create(SessionStoreUrl.scheme(url) + url.substring(url.indexOf("://")));
        } catch (IllegalArgumentException e) {
            throw new SessionStoreException("Session store " + shown + ": " + oneLine(e), e);
        }
        uri.setTimeout(COMMAND_TIMEOUT);
        ClientResources resources = DefaultClientResources.builder()
                .ioThreadPoolSize(2)
                .computationThreadPoolSize(2)
                .reconnectDelay(Delay.exponential(Duration.ofMillis(50), SYNC_INTERVAL, 2, TimeUnit.MILLISECONDS))
                .build();
        RedisClient client = RedisClient.create(resources, uri);
        client.setOptions(ClientOptions.builder()
                .protocolVersion(ProtocolVersion.RESP3)
                .autoReconnect(true)
                // While disconnected, fail at once (the router then decides on its own) instead of queueing.
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(COMMAND_TIMEOUT))
                .socketOptions(SocketOptions.builder().connectTimeout(COMMAND_TIMEOUT).build())
                .build());
        StatefulRedisConnection<String, String> connection = null;
        RedisSessionStore store = null;
        try {
            connection = client.connect();
            requireVersion(connection.sync().info("server"), shown);
            refuseClusterNode(connection.sync().info("cluster"), shown);
            store = new RedisSessionStore(shown, ttl, clockMillis, resources, client, connection);
            store.start();
            LOG.info("Session store " + shown + ": connected; sessions are shared with every router using it");
            return store;
        } catch (RedisException | SessionStoreException e) {
            if (connection != null) {
                connection.close();
            }
            if (store != null) {
                store.background.shutdownNow();
            }
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            resources.shutdown(0, 2, TimeUnit.SECONDS);
            throw e instanceof SessionStoreException s ? s
                    : new SessionStoreException("Session store " + shown + ": " + oneLine(e), e);
        }
    }

    private void start() {
        connection.addListener(this::onPush);
        connection.sync().clientTracking(TRACKING);
        client.addListener(new RedisConnectionStateListener() {
            @Override
            public void onRedisDisconnected(RedisChannelHandler<?, ?> channel) {
                if (!closed) {
                    markDegraded("connection lost");
                }
            }
        });
        long interval = SYNC_INTERVAL.toMillis();
        background.scheduleWithFixedDelay(this::sync, interval, interval, TimeUnit.MILLISECONDS);
    }

    /**
     * A cluster node answers MOVED for every pool whose slot another node owns, so the store would sit degraded; the
     * keys are laid out for a cluster (one slot per pool) but the client, and its tracking connection, speak to one
     * server.
     */
    private static void refuseClusterNode(String info, String shown) throws SessionStoreException {
        for (String line : info.split("\r?\n")) {
            if (line.trim().equals("cluster_enabled:1")) {
                throw new SessionStoreException("Session store " + shown + ": the server is a Redis Cluster node, "
                        + "and this router's store speaks to one Redis server; give a standalone Redis (or a "
                        + "Sentinel-managed primary)", null);
            }
        }
    }

    private static void requireVersion(String info, String shown) throws SessionStoreException {
        String version = null;
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("redis_version:")) {
                version = line.substring("redis_version:".length()).trim();
            }
        }
        if (version == null) {
            return;
        }
        String[] parts = version.split("\\.");
        try {
            int major = Integer.parseInt(parts[0]);
            int minor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
            if (major > MIN_VERSION[0] || (major == MIN_VERSION[0] && minor >= MIN_VERSION[1])) {
                return;
            }
        } catch (NumberFormatException unparsable) {
            return;
        }
        throw new SessionStoreException("Session store " + shown + ": needs Redis " + MIN_VERSION[0] + "."
                + MIN_VERSION[1] + " or newer (server is " + version + ")", null);
    }

    @Override
    public SessionTable table(String scope) {
        return tables.computeIfAbsent(scope, s -> new RedisSessionTable(this, s, ttlMillis));
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public boolean degraded() {
        return degraded;
    }

    /** Routing and releases do not call the store, and bindings made meanwhile are this router's own. */
    boolean offline() {
        return offline;
    }

    /** Writes back what is pending (last uses, the journal) while the store answers, then disconnects. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        background.shutdownNow();
        try {
            background.awaitTermination(COMMAND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!degraded()) {
            sync();
        }
        closed = true;
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        resources.shutdown(0, 2, TimeUnit.SECONDS);
    }

    /** Runs the background step now and waits for it (tests whose clock jumps further than real time passes). */
    void syncNow() throws Exception {
        background.submit(this::sync).get();
    }

    long nowMillis() {
        return clockMillis.getAsLong();
    }

    Scripts scripts() {
        return scripts;
    }

    StatefulRedisConnection<String, String> connection() {
        return connection;
    }

    /** A fresh pool epoch: set by the first script that finds a pool without one (after its data was lost). */
    String newEpoch() {
        return Long.toHexString(ThreadLocalRandom.current().nextLong());
    }

    void register(RedisSessionTable.Pool pool) {
        poolsByTag.put(pool.keys.tag(), pool);
    }

    /** Routing and background work stop using the store until a recovery succeeds. */
    void markDegraded(String why) {
        boolean first;
        synchronized (health) {
            failures++;
            offline = true;
            first = !degraded;
            degraded = true;
        }
        if (first) {
            LOG.warning("Session store " + description + " unavailable (" + why + "): routing on this router's own "
                    + "view of the sessions until it answers again");
        }
    }

    private long failures() {
        synchronized (health) {
            return failures;
        }
    }

    /** Routing uses the store again, unless a failure happened since {@code failuresBefore}. */
    private boolean backOnline(long failuresBefore) {
        synchronized (health) {
            if (failures == failuresBefore) {
                offline = false;
            }
            return !offline;
        }
    }

    /** The recovery is complete, unless a failure happened since {@code failuresBefore}. */
    private boolean recovered(long failuresBefore) {
        synchronized (health) {
            if (failures != failuresBefore || !degraded) {
                return false;
            }
            degraded = false;
            return true;
        }
    }

    /** Waits for a reply for at most {@code timeout}; a failure or a late reply is the store being unavailable. */
    static <T> T await(Future<T> reply, Duration timeout) throws StoreUnavailableException {
        try {
            return reply.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new StoreUnavailableException("no answer within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            throw new StoreUnavailableException(oneLine(Scripts.unwrap(e.getCause())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted");
        }
    }

    /** The innermost message of a failure, on one line. */
    static String oneLine(Throwable failure) {
        String message = failure.toString();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t.getMessage() != null && !t.getMessage().isBlank()) {
                message = t.getMessage();
            }
        }
        return message.replaceAll("\\s*\\R\\s*", " ").trim();
    }

    /** A key a table may have cached changed on the server; {@code null} keys: the database was flushed. */
    private void onPush(PushMessage message) {
        if (!"invalidate".equals(message.getType())) {
            return;
        }
        List<Object> content = message.getContent(StringCodec.UTF8::decodeKey);
        if (content.size() < 2 || !(content.get(1) instanceof List<?> keys)) {
            poolsByTag.values().forEach(RedisSessionTable.Pool::forgetAll);
            return;
        }
        for (Object key : keys) {
            Keys.BindingKey binding = Keys.parseBinding(String.valueOf(key));
            RedisSessionTable.Pool pool = binding == null ? null : poolsByTag.get(binding.tag());
            if (pool != null) {
                pool.invalidated(binding.sessionId(), () -> connection.async().get(String.valueOf(key)));
            }
        }
    }

    /**
     * The background step: after a failure, probe the store, track invalidations again, reconcile every table and
     * route through the store again (from then on no turn goes to a binding this router made on its own), then
     * forget the cached bindings whose invalidations may have been missed; then each table's routine work
     * (write-back, releases, journal, counters).
     */
    private void sync() {
        long failuresBefore = failures();
        try {
            boolean recovering = degraded();
            if (recovering) {
                await(connection.async().ping(), COMMAND_TIMEOUT);
                trackInvalidations();
                List<Runnable> forgetUnverified = new ArrayList<>();
                for (RedisSessionTable table : tables.values()) {
                    forgetUnverified.add(table.reconcile());
                }
                if (!backOnline(failuresBefore)) {
                    return;
                }
                forgetUnverified.forEach(Runnable::run);
            }
            for (RedisSessionTable table : tables.values()) {
                table.sync();
            }
            if (recovering && recovered(failuresBefore)) {
                LOG.info("Session store " + description + " answers again; bindings made meanwhile are reconciled");
            }
        } catch (StoreUnavailableException e) {
            markDegraded(e.getMessage());
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "Session store " + description + ": background work failed", e);
            markDegraded(oneLine(e));
        }
    }

    /** Turns tracking on for a new connection; one that kept its tracking refuses the same prefix again. */
    private void trackInvalidations() throws StoreUnavailableException {
        try {
            await(connection.async().clientTracking(TRACKING), COMMAND_TIMEOUT);
        } catch (StoreUnavailableException e) {
            if (!e.getMessage().contains("overlaps")) {
                throw e;
            }
        }
    }
}
