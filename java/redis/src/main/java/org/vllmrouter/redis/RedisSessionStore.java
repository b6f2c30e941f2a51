package org.vllmrouter.redis;

import io.lettuce.core.RedisException;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.vllmrouter.core.session.InMemorySessionTable;
import org.vllmrouter.core.session.LocalTrajectories;
import org.vllmrouter.core.session.SessionStore;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionStoreUrl;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.TrajectoryEnds;

/**
 * Sticky sessions in Redis, shared by every router replica that names the same store. One RESP3 connection
 * ({@link StoreConnection}) carries the scripts that bind sessions (each a single atomic step on the server,
 * {@link ScriptGateway}) and the invalidations that keep each table's near cache right
 * ({@link InvalidationTracking}), so a later request of a known session costs no round trip. A background thread
 * writes last uses back once a second, refreshes the counters and, after the store failed, reconciles what this
 * router decided on its own ({@link OutageJournal}).
 *
 * <p>When the store does not answer within the routing timeout, or the connection drops, the store is degraded
 * ({@link StoreHealth}): routing goes on from this router's own view (its near cache and last known counts), new
 * bindings are kept in a journal, releases are remembered; once the store answers again the releases are replayed
 * and the journal is adopted (a binding the store already holds wins), so no count goes negative or stays behind.
 * A pool whose data the store lost (its epoch changed, e.g. a restart without persistence) gets every binding this
 * router knows back. From the moment that reconciling is done, routing asks the store again and never serves a
 * binding this router made on its own: its session's next turn goes where the store says, on every replica alike.
 *
 * <p>On a Redis Cluster the URL names any node. Every key of a pool shares one hash slot, so a pool lives on the
 * primary that owns its slot; scripts go there on the one connection this router keeps to that primary, which
 * also carries the primary's invalidations (so a reply is still applied before any later invalidation). A
 * tracked connection that drops, or a change of the cluster's topology (a failover, a moved slot), is a fault
 * like any other: degraded, then tracking is set up on the primaries of the new topology and every table is
 * reconciled.
 */
public final class RedisSessionStore implements SessionStore {
    private static final Logger LOG = Logger.getLogger(RedisSessionStore.class.getName());

    private final StoreConnection connection;
    private final long ttlMillis;
    private final StoreContext context;
    private final ConcurrentHashMap<String, RedisSessionTable> tables = new ConcurrentHashMap<>();
    private final ScheduledExecutorService background;
    private final Duration ttl;
    private final int maxSessions;
    private final TrajectoryEnds ends;
    private volatile boolean closed;

    private RedisSessionStore(StoreConnection connection, Duration ttl, LongSupplier clockMillis, int maxSessions,
                              TrajectoryEnds ends) {
        this.connection = connection;
        this.ttlMillis = ttl.toMillis();
        this.ttl = ttl;
        this.maxSessions = maxSessions;
        this.ends = ends;
        String description = connection.description();
        this.context = new StoreContext(description, clockMillis, new StoreHealth(description),
                new ScriptGateway(new Scripts(connection.connection()), description), connection.commands(),
                new InvalidationTracking(connection));
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
        return open(url, ttl, clockMillis, InMemorySessionTable.DEFAULT_MAX_SESSIONS, TrajectoryEnds.NONE);
    }

    /**
     * As {@link #open(String, Duration, LongSupplier)}; each table keeps the trajectories of at most
     * {@code maxSessions} sessions in this process ({@link LocalTrajectories}: the store holds bindings only), and
     * {@code ends} hears each one as it ends.
     */
    static RedisSessionStore open(String url, Duration ttl, LongSupplier clockMillis, int maxSessions,
                                  TrajectoryEnds ends) throws SessionStoreException {
        StoreConnection connection = StoreConnection.open(url);
        RedisSessionStore store = null;
        try {
            store = new RedisSessionStore(connection, ttl, clockMillis, maxSessions, ends);
            store.start();
        } catch (RedisException | StoreUnavailableException e) {
            if (store != null) {
                store.background.shutdownNow();
            }
            connection.close();
            throw new SessionStoreException("Session store " + connection.description() + ": "
                    + StoreUnavailableException.oneLine(e), e);
        }
        LOG.info("Session store " + connection.description() + ": connected"
                + (connection.isCluster() ? " to a Redis Cluster" : "")
                + "; sessions are shared with every router using it");
        return store;
    }

    private void start() throws StoreUnavailableException {
        StoreHealth health = context.health();
        InvalidationTracking tracking = context.tracking();
        connection.onPush(tracking::onPush);
        connection.onTopologyChange(() -> health.markDegraded("the cluster's topology changed"));
        // Only a tracked connection matters: the cluster client also opens short-lived ones to read the topology.
        connection.onDisconnect(channel -> {
            if (!closed && tracking.isTracked(channel)) {
                health.markDegraded("connection lost");
            }
        });
        tracking.track();
        long interval = StoreTimeouts.SYNC_INTERVAL.toMillis();
        background.scheduleWithFixedDelay(this::sync, interval, interval, TimeUnit.MILLISECONDS);
    }

    @Override
    public SessionTable table(String scope) {
        return tables.computeIfAbsent(scope, s -> new RedisSessionTable(context, s, ttlMillis,
                new LocalTrajectories(ttl, maxSessions, ends)));
    }

    @Override
    public String description() {
        return context.description();
    }

    @Override
    public boolean degraded() {
        return context.health().degraded();
    }

    /** Writes back what is pending (last uses, the journal) while the store answers, then disconnects. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        background.shutdownNow();
        try {
            background.awaitTermination(StoreTimeouts.COMMAND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!degraded()) {
            sync();
        }
        closed = true;
        context.tracking().stop();
        connection.close();
    }

    /** Runs the background step now and waits for it (tests whose clock jumps further than real time passes). */
    void syncNow() throws Exception {
        background.submit(this::sync).get();
    }

    /** Single-key commands, as the tables send them (for tests that look at the store's keys). */
    RedisClusterAsyncCommands<String, String> commands() {
        return context.commands();
    }

    /**
     * The background step: after a failure, probe the store, track invalidations again, reconcile every table and
     * route through the store again (from then on no turn goes to a binding this router made on its own), then
     * forget the cached bindings whose invalidations may have been missed; then each table's routine work
     * (write-back, releases, journal, counters).
     */
    private void sync() {
        StoreHealth health = context.health();
        long failuresBefore = health.failures();
        try {
            boolean recovering = health.degraded();
            if (recovering) {
                StoreTimeouts.await(context.commands().ping(), StoreTimeouts.COMMAND);
                context.tracking().track();
                List<Runnable> forgetUnverified = new ArrayList<>();
                for (RedisSessionTable table : tables.values()) {
                    forgetUnverified.add(table.reconcile());
                }
                if (!health.backOnline(failuresBefore)) {
                    return;
                }
                forgetUnverified.forEach(Runnable::run);
            }
            for (RedisSessionTable table : tables.values()) {
                table.sync();
            }
            if (recovering && health.recovered(failuresBefore)) {
                LOG.info("Session store " + description() + " answers again; bindings made meanwhile are reconciled");
            }
        } catch (StoreUnavailableException e) {
            health.markDegraded(e.getMessage());
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "Session store " + description() + ": background work failed", e);
            health.markDegraded(StoreUnavailableException.oneLine(e));
        }
    }
}
