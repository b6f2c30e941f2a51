package org.vllmrouter.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.TrackingArgs;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.push.PushMessage;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.event.ClusterTopologyChangedEvent;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
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
 *
 * <p>On a Redis Cluster the URL names any node. Every key of a pool shares one hash slot, so a pool lives on the
 * primary that owns its slot; scripts go there on the one connection this router keeps to that primary, which
 * also carries the primary's invalidations (so a reply is still applied before any later invalidation). A
 * tracked connection that drops, or a change of the cluster's topology (a failover, a moved slot), is a fault
 * like any other: degraded, then tracking is set up on the primaries of the new topology and every table is
 * reconciled.
 */
public final class RedisSessionStore implements SessionStore {
    /** Lettuce's switch for its io_uring transport, read once when Lettuce first picks a transport. */
    static final String LETTUCE_IO_URING = "io.lettuce.core.iouring";

    static {
        // The engine ships Netty's io_uring transport for its own event loops. Lettuce would find it too, stay on
        // epoll anyway, and warn on every start that both are there; it keeps epoll, quietly, unless a user set
        // the switch. It is set here, not taken from the router's StartEnvironment like the engine's own settings:
        // Lettuce reads it when its classes load, so it must be in place before this class first touches Lettuce.
        if (System.getProperty(LETTUCE_IO_URING) == null) {
            System.setProperty(LETTUCE_IO_URING, "false");
        }
    }

    private static final Logger LOG = Logger.getLogger(RedisSessionStore.class.getName());

    /** How long a routing call waits for the store before it decides on its own and marks the store degraded. */
    static final Duration ROUTE_TIMEOUT = Duration.ofSeconds(1);
    /** How often last uses are written back and the counters refreshed; also the store's reconnect probe. */
    static final Duration SYNC_INTERVAL = Duration.ofSeconds(1);
    /** Bound of background calls (write-back, reconciling) and of the connection attempt at start. */
    static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(5);
    private static final int HANDSHAKE_ATTEMPTS = 4;
    private static final int[] MIN_VERSION = {6, 2};

    private static final TrackingArgs TRACKING =
            TrackingArgs.Builder.enabled().bcast().prefixes(Keys.BINDING_PREFIX).noloop();

    private final String description;
    private final long ttlMillis;
    private final LongSupplier clockMillis;
    private final ClientResources resources;
    private final AbstractRedisClient client;
    private final StatefulConnection<String, String> connection;
    /** The same connection as {@link #connection} on a Redis Cluster, else null. */
    private final StatefulRedisClusterConnection<String, String> cluster;
    private final RedisClusterAsyncCommands<String, String> commands;
    private final Scripts scripts;
    /** The connections tracking is on: when one of them drops, invalidations may have been missed. */
    private final Set<RedisChannelHandler<?, ?>> tracked = ConcurrentHashMap.newKeySet();
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
                              AbstractRedisClient client, StatefulConnection<String, String> connection) {
        this.description = description;
        this.ttlMillis = ttl.toMillis();
        this.clockMillis = clockMillis;
        this.resources = resources;
        this.client = client;
        this.connection = connection;
        if (connection instanceof StatefulRedisClusterConnection<String, String> c) {
            this.cluster = c;
            this.commands = c.async();
        } else {
            this.cluster = null;
            this.commands = ((StatefulRedisConnection<String, String>) connection).async();
        }
        this.scripts = new Scripts(connection);
        this.background = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "vllm-router-session-store");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Connects to the store at {@code url} (checked by {@link SessionStoreUrl#problem}), a standalone Redis or any
     * node of a Redis Cluster, and starts its background thread. Session times come from {@code clockMillis}
     * (milliseconds; every replica's clock must agree to well within the TTL).
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
        AbstractRedisClient client = null;
        StatefulConnection<String, String> connection = null;
        RedisSessionStore store = null;
        try {
            RedisClient standalone = RedisClient.create(resources, uri);
            client = standalone;
            ClientOptions.Builder options = ClientOptions.builder();
            configure(options);
            standalone.setOptions(options.build());
            // Database 0 first: a cluster node refuses SELECT, and the message should say why.
            StatefulRedisConnection<String, String> first =
                    connectFirst(standalone, RedisURI.builder(uri).withDatabase(0).build());
            connection = first;
            requireVersion(first.sync().info("server"), shown);
            boolean clusterNode = isClusterNode(first.sync().info("cluster"));
            if (!clusterNode && uri.getDatabase() != 0) {
                first.sync().select(uri.getDatabase());
            }
            if (clusterNode) {
                first.close();
                connection = null;
                standalone.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                client = null;
                if (uri.getDatabase() != 0) {
                    throw new SessionStoreException("Session store " + shown + ": the server is a Redis Cluster node, "
                            + "and a cluster has only database 0; drop /" + uri.getDatabase() + " from the URL", null);
                }
                RedisClusterClient clustered = RedisClusterClient.create(resources, uri);
                client = clustered;
                clustered.setOptions(clusterOptions());
                connection = clustered.connect();
            }
            store = new RedisSessionStore(shown, ttl, clockMillis, resources, client, connection);
            store.start();
            LOG.info("Session store " + shown + ": connected" + (store.cluster == null ? "" : " to a Redis Cluster")
                    + "; sessions are shared with every router using it");
            return store;
        } catch (RedisException | SessionStoreException | StoreUnavailableException e) {
            if (connection != null) {
                connection.close();
            }
            if (store != null) {
                store.background.shutdownNow();
            }
            if (client != null) {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
            resources.shutdown(0, 2, TimeUnit.SECONDS);
            throw e instanceof SessionStoreException s ? s
                    : new SessionStoreException("Session store " + shown + ": " + oneLine(e), e);
        }
    }

    /**
     * Lettuce reports a failed handshake (a wrong password, say) by closing the channel and then failing the
     * connect future with the server's reply; on a busy host the close can overtake that reply, and the caller
     * sees only "Connection closed prematurely" or "RedisHandshakeHandler not registered". Those two messages
     * say nothing about the server, so the connect is tried again, a bounded number of times, until the reply
     * (or a steady failure) shows.
     */
    private static StatefulRedisConnection<String, String> connectFirst(RedisClient client, RedisURI uri) {
        for (int attempt = 1; ; attempt++) {
            try {
                return client.connect(uri);
            } catch (RedisException e) {
                String message = oneLine(e);
                boolean handshakeRace = message.equals("Connection closed prematurely")
                        || message.endsWith("HandshakeHandler not registered");
                if (!handshakeRace || attempt == HANDSHAKE_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    /**
     * The standalone options, plus a topology refresh when the cluster says so (a MOVED or ASK redirect, a node
     * that keeps failing to reconnect): the refresh that follows a failover or a moved slot is what
     * {@link #start} turns into a reconcile.
     */
    private static ClusterClientOptions clusterOptions() {
        ClusterClientOptions.Builder options = ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enableAllAdaptiveRefreshTriggers()
                        .adaptiveRefreshTriggersTimeout(SYNC_INTERVAL)
                        .build());
        configure(options);
        return options.build();
    }

    /** RESP3 (for invalidations), reconnecting, bounded waits. */
    private static void configure(ClientOptions.Builder options) {
        options.protocolVersion(ProtocolVersion.RESP3)
                .autoReconnect(true)
                // While disconnected, fail at once (the router then decides on its own) instead of queueing.
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(COMMAND_TIMEOUT))
                .socketOptions(SocketOptions.builder().connectTimeout(COMMAND_TIMEOUT).build());
    }

    private void start() throws StoreUnavailableException {
        if (cluster != null) {
            cluster.addListener((node, message) -> onPush(message));
            resources.eventBus().get()
                    .filter(ClusterTopologyChangedEvent.class::isInstance)
                    .subscribe(changed -> markDegraded("the cluster's topology changed"));
        } else {
            ((StatefulRedisConnection<String, String>) connection).addListener(this::onPush);
        }
        // Only a tracked connection matters: the cluster client also opens short-lived ones to read the topology.
        client.addListener(new RedisConnectionStateListener() {
            @Override
            public void onRedisDisconnected(RedisChannelHandler<?, ?> channel) {
                if (!closed && tracked.contains(channel)) {
                    markDegraded("connection lost");
                }
            }
        });
        trackInvalidations();
        long interval = SYNC_INTERVAL.toMillis();
        background.scheduleWithFixedDelay(this::sync, interval, interval, TimeUnit.MILLISECONDS);
    }

    private static boolean isClusterNode(String info) {
        for (String line : info.split("\r?\n")) {
            if (line.trim().equals("cluster_enabled:1")) {
                return true;
            }
        }
        return false;
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
        tracked.clear();
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

    /** Commands on single keys; on a Redis Cluster each goes to the primary that owns its key. */
    RedisClusterAsyncCommands<String, String> commands() {
        return commands;
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
                pool.invalidated(binding.sessionId(), () -> commands.get(String.valueOf(key)));
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
                await(commands.ping(), COMMAND_TIMEOUT);
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

    /**
     * Turns tracking on where scripts run: the one connection, or on a cluster the connection to each primary that
     * carries the commands of its slots (one per host and port, see Lettuce's write connections).
     */
    private void trackInvalidations() throws StoreUnavailableException {
        if (cluster == null) {
            track((StatefulRedisConnection<String, String>) connection);
            return;
        }
        Set<RedisChannelHandler<?, ?>> primaries = new HashSet<>();
        for (RedisClusterNode node : cluster.getPartitions()) {
            if (node.is(RedisClusterNode.NodeFlag.UPSTREAM) && !node.hasNoSlots()) {
                StatefulRedisConnection<String, String> c = await(cluster.getConnectionAsync(
                        node.getUri().getHost(), node.getUri().getPort()), COMMAND_TIMEOUT);
                track(c);
                primaries.add((RedisChannelHandler<?, ?>) c);
            }
        }
        tracked.retainAll(primaries);
    }

    /** A connection that kept its tracking refuses the same prefix again: that is tracking on, too. */
    private void track(StatefulRedisConnection<String, String> c) throws StoreUnavailableException {
        try {
            await(c.async().clientTracking(TRACKING), COMMAND_TIMEOUT);
        } catch (StoreUnavailableException e) {
            if (!e.getMessage().contains("overlaps")) {
                throw e;
            }
        }
        tracked.add((RedisChannelHandler<?, ?>) c);
    }
}
