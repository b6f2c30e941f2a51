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
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.vllmrouter.core.config.UrlRedaction;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionStoreUrl;

/**
 * The one connection to the store, set up once: RESP3 (for invalidations), reconnecting, bounded waits. The URL
 * names a standalone Redis or any node of a Redis Cluster; which one it is shows in {@code INFO cluster}, and a
 * cluster node gets the cluster client instead. Start-up problems (unreachable, a wrong password, too old a
 * server, a database other than 0 on a cluster) are one-line errors.
 */
final class StoreConnection {
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

    private static final int HANDSHAKE_ATTEMPTS = 4;
    private static final int[] MIN_VERSION = {6, 2};

    private final String description;
    private final ClientResources resources;
    private final AbstractRedisClient client;
    private final StatefulConnection<String, String> connection;
    /** The same connection as {@link #connection} on a Redis Cluster, else null. */
    private final StatefulRedisClusterConnection<String, String> cluster;
    private final RedisClusterAsyncCommands<String, String> commands;

    private StoreConnection(String description, ClientResources resources, AbstractRedisClient client,
                            StatefulConnection<String, String> connection) {
        this.description = description;
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
    }

    /** Connects to the store at {@code url}, checked by {@link SessionStoreUrl#problem}. */
    static StoreConnection open(String url) throws SessionStoreException {
        String shown = UrlRedaction.redact(url);
        RedisURI uri;
        try {
            uri = RedisURI.create(SessionStoreUrl.scheme(url) + url.substring(url.indexOf("://")));
        } catch (IllegalArgumentException e) {
            throw new SessionStoreException("Session store " + shown + ": " + StoreUnavailableException.oneLine(e), e);
        }
        uri.setTimeout(StoreTimeouts.COMMAND);
        ClientResources resources = DefaultClientResources.builder()
                .ioThreadPoolSize(2)
                .computationThreadPoolSize(2)
                .reconnectDelay(Delay.exponential(Duration.ofMillis(50), StoreTimeouts.SYNC_INTERVAL, 2,
                        TimeUnit.MILLISECONDS))
                .build();
        AbstractRedisClient client = null;
        StatefulConnection<String, String> connection = null;
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
            return new StoreConnection(shown, resources, client, connection);
        } catch (RedisException | SessionStoreException e) {
            if (connection != null) {
                connection.close();
            }
            if (client != null) {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
            resources.shutdown(0, 2, TimeUnit.SECONDS);
            throw e instanceof SessionStoreException s ? s
                    : new SessionStoreException("Session store " + shown + ": " + StoreUnavailableException.oneLine(e),
                            e);
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
                String message = StoreUnavailableException.oneLine(e);
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
     * {@link #onTopologyChange} reports.
     */
    private static ClusterClientOptions clusterOptions() {
        ClusterClientOptions.Builder options = ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enableAllAdaptiveRefreshTriggers()
                        .adaptiveRefreshTriggersTimeout(StoreTimeouts.SYNC_INTERVAL)
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
                .timeoutOptions(TimeoutOptions.enabled(StoreTimeouts.COMMAND))
                .socketOptions(SocketOptions.builder().connectTimeout(StoreTimeouts.COMMAND).build());
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

    /** The URL with its password hidden. */
    String description() {
        return description;
    }

    boolean isCluster() {
        return cluster != null;
    }

    /** Where scripts are sent: on a Redis Cluster, to the primary that owns the slot of their first key. */
    StatefulConnection<String, String> connection() {
        return connection;
    }

    /** Commands on single keys; on a Redis Cluster each goes to the primary that owns its key. */
    RedisClusterAsyncCommands<String, String> commands() {
        return commands;
    }

    /** Messages the server pushes (invalidations), from every connection that carries scripts. */
    void onPush(Consumer<PushMessage> listener) {
        if (cluster != null) {
            cluster.addListener((node, message) -> listener.accept(message));
        } else {
            ((StatefulRedisConnection<String, String>) connection).addListener(listener::accept);
        }
    }

    /** A failover or a moved slot on a Redis Cluster; never on a standalone server. */
    void onTopologyChange(Runnable listener) {
        if (cluster != null) {
            resources.eventBus().get()
                    .filter(ClusterTopologyChangedEvent.class::isInstance)
                    .subscribe(changed -> listener.run());
        }
    }

    /** Any connection of the client that drops, the cluster client's short-lived topology reads included. */
    void onDisconnect(Consumer<RedisChannelHandler<?, ?>> listener) {
        client.addListener(new RedisConnectionStateListener() {
            @Override
            public void onRedisDisconnected(RedisChannelHandler<?, ?> channel) {
                listener.accept(channel);
            }
        });
    }

    /**
     * The connections scripts run on: the one connection, or on a cluster the connection to each primary that
     * carries the commands of its slots (one per host and port, see Lettuce's write connections).
     */
    List<StatefulRedisConnection<String, String>> scriptConnections() throws StoreUnavailableException {
        if (cluster == null) {
            return List.of((StatefulRedisConnection<String, String>) connection);
        }
        List<StatefulRedisConnection<String, String>> primaries = new ArrayList<>();
        for (RedisClusterNode node : cluster.getPartitions()) {
            if (node.is(RedisClusterNode.NodeFlag.UPSTREAM) && !node.hasNoSlots()) {
                primaries.add(StoreTimeouts.await(cluster.getConnectionAsync(node.getUri().getHost(),
                        node.getUri().getPort()), StoreTimeouts.COMMAND));
            }
        }
        return primaries;
    }

    void close() {
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        resources.shutdown(0, 2, TimeUnit.SECONDS);
    }
}
