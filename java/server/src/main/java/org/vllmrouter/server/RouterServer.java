package org.vllmrouter.server;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.ServerChannelRecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.NetUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.Ticker;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.PdMode;
import org.vllmrouter.core.config.PrefillUrl;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.config.StaticKvSources;
import org.vllmrouter.core.policy.KvAwarePolicy;
import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.policy.PolicyRegistry;
import org.vllmrouter.core.policy.StickyBalancedPolicy;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionStore;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionStores;
import org.vllmrouter.core.session.TrajectoryEnds;
import org.vllmrouter.core.settings.HealthSettings;
import org.vllmrouter.core.settings.KvEventSettings;
import org.vllmrouter.core.settings.RouterSettings;
import org.vllmrouter.core.settings.ServerSettings;
import org.vllmrouter.core.settings.SessionSettings;
import org.vllmrouter.core.settings.WorkerPoolSettings;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRegistry;
import org.vllmrouter.core.worker.WorkerRole;
import org.vllmrouter.discovery.DiscoveryStartException;
import org.vllmrouter.discovery.WorkerDiscovery;
import org.vllmrouter.kv.CacheIdentity;
import org.vllmrouter.kv.KvSubscribers;
import org.vllmrouter.server.http.ClientReadDeadline;
import org.vllmrouter.server.http.InFlightRequests;
import org.vllmrouter.server.kv.KvPlacement;
import org.vllmrouter.server.kv.KvSources;
import org.vllmrouter.server.metrics.MetricsHandler;
import org.vllmrouter.server.metrics.RouterMetrics;
import org.vllmrouter.server.metrics.TrajectoryMetrics;
import org.vllmrouter.server.trace.RequestTracer;
import org.vllmrouter.server.proxy.Proxy;
import org.vllmrouter.server.proxy.Transport;
import org.vllmrouter.server.proxy.WorkerCalls;
import org.vllmrouter.server.proxy.WorkerTls;
import org.vllmrouter.server.route.AdmissionLimiter;
import org.vllmrouter.server.route.RouteTable;
import org.vllmrouter.server.route.SessionRoutes;
import org.vllmrouter.server.worker.ControlClient;
import org.vllmrouter.server.worker.HealthChecker;
import org.vllmrouter.server.worker.StartupWait;
import org.vllmrouter.server.worker.DiscoveredWorkerSink;
import org.vllmrouter.server.worker.WorkerFactory;
import org.vllmrouter.server.worker.WorkerLoadScraper;

/**
 * A running router, and where its parts are put together: the HTTP listener (the inbound pipeline of package
 * {@code http} ending in the {@code route} table, whose handlers hand requests to the {@code proxy}), the
 * Prometheus listener ({@code metrics}), the worker registry and policies, the health checker ({@code worker}) and
 * the session sweeper. {@link #start} returns once both ports are bound; {@link #close} stops accepting, lets
 * in-flight requests finish for a bounded time, then releases everything. Each part is registered on one
 * {@link StartedParts} as it starts, and a start that fails stops the parts started so far through it just as a
 * close does.
 */
public final class RouterServer implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(RouterServer.class.getName());
    /** How long {@link #close()} waits for in-flight requests. */
    static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(30);
    /** Idle sessions are swept off the routing path this often, a bounded batch per policy at a time. */
    private static final int SWEEP_INTERVAL_SECS = 10;
    /** How often sticky_balanced's inputs are read from the workers' /metrics (vLLM updates its gauges per step). */
    private static final Duration LOAD_SCRAPE_INTERVAL = Duration.ofSeconds(1);
    private static final int SWEEP_BATCH = 10_000;
    /**
     * Large enough that a trainer's burst of thousands of connections drains in a few wake-ups, small enough that one
     * batch holds up the loop's other connections for milliseconds only. HAProxy's tune.maxaccept (64) left such a
     * burst a far longer tail (docs/perf/event-loops.md).
     */
    static final int ACCEPTS_PER_WAKEUP = 1024;
    /**
     * How much of an answer may wait for a client before the relay stops reading the worker (and when it reads again).
     * Netty's default (64 KiB) was smaller than what one read of a worker brings, so a long answer stopped and
     * restarted the worker's reads after almost every read, relaying slower for more CPU a MiB
     * (docs/perf/cpu-per-request.md). A client that stops reading holds at most this plus one read in the router.
     */
    static final WriteBufferWaterMark CLIENT_WRITE_BUFFER = new WriteBufferWaterMark(256 * 1024, 512 * 1024);
    /** How long {@link #close()} waits for the open connections to close before it stops the event loops. */
    private static final long CONNECTIONS_CLOSE_MILLIS = 2_000;
    /** Closing a listener takes its loop microseconds; a loop that does not do it within this has stopped. */
    private static final long LISTENER_CLOSE_MILLIS = 1_000;
    /** The loops' own shutdown timeout (2 s) and a margin for a busy machine. */
    private static final long LOOPS_STOP_MILLIS = 4_000;

    private final ServerSettings config;
    private final StartedParts parts;
    private final AtomicReference<Duration> drainTimeout;
    private final ChannelGroup connections;
    private final WorkerRegistry workers;
    private final PolicyRegistry policies;
    private final KvSources kvSources;
    private final Channel listener;
    private final Channel metricsListener;
    private final Object closeLock = new Object();
    private boolean closed;

    private RouterServer(ServerSettings config, StartedParts parts, AtomicReference<Duration> drainTimeout,
                         ChannelGroup connections, WorkerRegistry workers, PolicyRegistry policies,
                         KvSources kvSources, Channel listener, Channel metricsListener) {
        this.config = config;
        this.parts = parts;
        this.drainTimeout = drainTimeout;
        this.connections = connections;
        this.workers = workers;
        this.policies = policies;
        this.kvSources = kvSources;
        this.listener = listener;
        this.metricsListener = metricsListener;
    }

    /**
     * What a test or the engine process may set about a router beyond its configuration; {@link #DEFAULTS} is what
     * every other router runs with.
     *
     * @param limiterClock the admission limiter's clock; null = the event loop's (tests freeze it to make the bucket
     *                     deterministic)
     * @param workerTls how {@code https} workers are trusted; null = as {@link WorkerPoolSettings#certFile()} says
     *                  (tests trust their own CA)
     * @param clientReadTimeout how long a client may take to send a request (tests shorten it)
     * @param transport the socket layer; null = as {@link ServerSettings#transport()} says (tests run each one)
     * @param beforeListening runs once the start has waited for what it needs, just before the router port binds
     *                        (the engine process: from here a stop signal waits for the start, see EngineStop)
     */
    record Options(Ticker limiterClock, WorkerTls workerTls, Duration clientReadTimeout, Transport transport,
                   Runnable beforeListening) {
        static final Options DEFAULTS = new Options(null, null, ClientReadDeadline.DEFAULT, null, () -> { });

        Options withLimiterClock(Ticker clock) {
            return new Options(clock, workerTls, clientReadTimeout, transport, beforeListening);
        }

        Options withWorkerTls(WorkerTls tls) {
            return new Options(limiterClock, tls, clientReadTimeout, transport, beforeListening);
        }

        Options withClientReadTimeout(Duration timeout) {
            return new Options(limiterClock, workerTls, timeout, transport, beforeListening);
        }

        Options withTransport(Transport chosen) {
            return new Options(limiterClock, workerTls, clientReadTimeout, chosen, beforeListening);
        }

        Options withBeforeListening(Runnable action) {
            return new Options(limiterClock, workerTls, clientReadTimeout, transport, action);
        }
    }

    /** Starts a router with this process's {@link StartEnvironment}. */
    public static RouterServer start(RouterConfig config) throws ConfigException, RouterStartException {
        return start(RouterSettings.of(config, StartEnvironment.current()), Options.DEFAULTS);
    }

    static RouterServer start(RouterSettings settings, Options options) throws RouterStartException {
        Transport transport;
        int loops;
        try {
            transport = options.transport() != null ? options.transport()
                    : Transport.resolve(settings.server().transport());
            loops = EventLoopCount.resolve(settings.server().eventLoops(), Runtime.getRuntime().availableProcessors());
        } catch (IllegalArgumentException e) {
            throw new RouterStartException(e.getMessage(), e);
        }
        WorkerTls workerTls = options.workerTls() != null ? options.workerTls()
                : WorkerTls.trusting(settings.workers().certFile());
        // Every connection, accepted or to a worker, so a close can end them all before it stops the loops.
        ChannelGroup connections = new DefaultChannelGroup("vllm-router", GlobalEventExecutor.INSTANCE);
        ControlClient client = new ControlClient(workerTls, connections);
        TrajectoryMetrics trajectories = new TrajectoryMetrics();
        SessionStore sessionStore = openSessionStore(settings.sessions(), trajectories);
        StartedParts parts = new StartedParts();
        // How long a close waits for requests in flight: none when the start fails, as nothing was served yet.
        AtomicReference<Duration> drainTimeout = new AtomicReference<>(Duration.ZERO);
        try {
            EventLoopGroup group = transport.newGroup(loops, "vllm-router");
            parts.add(() -> stopLoops(group));
            // Closed just before the loops stop, when every part that opens connections has stopped.
            parts.add(() -> closeAll(connections));
            // auto depends on the kernel (and a container's seccomp profile), so say which one runs.
            LOG.info("Event loops: " + loops + " on " + transport.label());
            PolicyRegistry policies = new PolicyRegistry(settings.policies(), sessionStore);
            parts.add(policies::close);
            WorkerRegistry workers = new WorkerRegistry();
            RouterMetrics metrics = new RouterMetrics(workers::all, policies::sessionStats, sessionStore::degraded);
            trajectories.register(metrics.registry());
            RequestTracer tracer = RequestTracer.of(settings.tracing(), metrics.registry());
            // Closed after the requests in flight ended, so their spans are among the last export.
            parts.add(tracer::close);
            if (settings.tracing().enabled()) {
                LOG.info("Tracing: spans to " + settings.tracing().endpoint() + " over "
                        + settings.tracing().protocol().wireName()
                        + ", sampling ratio " + settings.tracing().samplingRatio());
            }
            WorkerCalls calls = new WorkerCalls(metrics);
            Proxy proxy = new Proxy(workers, calls, metrics, settings.server().requestTimeoutSecs(), workerTls,
                    connections);
            parts.add(proxy::close);
            WorkerFactory factory = new WorkerFactory(settings.worker(), metrics);
            List<Worker> initial = initialWorkers(settings.workers(), factory);
            EventLoop control = group.next();
            KvSources kvSources = null;
            KvPlacement kv = null;
            if (policies.all().stream().anyMatch(LoadBalancingPolicy::usesPrefixResidency)) {
                KvAwarePolicy kvAware = kvAwarePolicy(policies);
                KvEventSettings kvEvents = settings.kvEvents();
                kvSources = new KvSources(workers, client, control, kvEvents.sources(), kvIdentity(kvEvents),
                        metrics.registry(), KvSubscribers.Settings.DEFAULTS);
                parts.add(kvSources::close);
                kv = new KvPlacement(kvSources, workers, workerTls, connections,
                        kvAware != null ? kvAware.settings() : settings.policies().kvAware(), metrics.registry());
                parts.add(kv::close);
            }
            awaitStartupHealth(settings.health(), client, control, initial);
            initial.forEach(workers::add);

            HealthChecker healthChecker = new HealthChecker(workers, client, control,
                    settings.health().checkEndpoint(), settings.health().checkIntervalSecs(),
                    settings.health().checkTimeoutSecs());
            healthChecker.start();
            parts.add(healthChecker::close);
            readLiveLoad(policies, workers, client, control, parts);
            WorkerDiscovery discovery;
            try {
                discovery = WorkerDiscovery.start(settings.discovery(),
                        new DiscoveredWorkerSink(settings.health(), workers, factory, client, control),
                        metrics.registry());
            } catch (DiscoveryStartException e) {
                throw new RouterStartException(e.getMessage(), e);
            }
            parts.add(discovery::close);
            ScheduledFuture<?> sweeper = control.scheduleAtFixedRate(() -> policies.expireIdleSessions(SWEEP_BATCH),
                    SWEEP_INTERVAL_SECS, SWEEP_INTERVAL_SECS, TimeUnit.SECONDS);
            parts.add(() -> sweeper.cancel(false));

            AdmissionLimiter limiter = new AdmissionLimiter(settings.admission(), control,
                    options.limiterClock() != null ? options.limiterClock() : control.ticker());
            RouteTable routes = new RouteTable(settings, workers, policies, factory, proxy, calls, metrics, limiter,
                    client, kv);
            InFlightRequests inFlight = new InFlightRequests();
            // Waits once the listeners are closed, so no new connection brings more.
            parts.add(() -> awaitInFlight(inFlight, drainTimeout.get()));
            options.beforeListening().run();
            Channel listener = bind(group, settings.server().host(), settings.server().port(),
                    new RouterChannelInitializer(settings.server(), routes, inFlight, metrics,
                            options.clientReadTimeout(), connections, tracer),
                    "router");
            parts.add(() -> awaitLoop(listener.close(), LISTENER_CLOSE_MILLIS, "The router port's listener did not close"));
            Channel metricsListener = bind(group, settings.metrics().host(), settings.metrics().port(),
                    metricsInitializer(metrics, connections), "Prometheus");
            parts.add(() -> awaitLoop(metricsListener.close(), LISTENER_CLOSE_MILLIS,
                    "The metrics port's listener did not close"));
            // The first step of a close: requests arriving on open connections are turned away from here on.
            parts.add(inFlight::drain);
            LOG.info("Router ready | workers: " + workers.all().stream().map(Worker::shownUrl).toList());
            LOG.info("Starting server on " + settings.server().host() + ":"
                    + ((InetSocketAddress) listener.localAddress()).getPort());
            return new RouterServer(settings.server(), parts, drainTimeout, connections, workers, policies, kvSources, listener,
                    metricsListener);
        } catch (RouterStartException | RuntimeException e) {
            try {
                parts.close();
            } catch (RuntimeException closeFailure) {
                e.addSuppressed(closeFailure);
            }
            throw e;
        }
    }

    /** sticky_balanced instances read the workers' own load; routers without one scrape nothing. */
    private static void readLiveLoad(PolicyRegistry policies, WorkerRegistry workers, ControlClient client,
                                     EventLoop control, StartedParts parts) {
        List<StickyBalancedPolicy> balanced = policies.all().stream().filter(StickyBalancedPolicy.class::isInstance)
                .map(StickyBalancedPolicy.class::cast).toList();
        if (balanced.isEmpty()) {
            return;
        }
        WorkerLoadScraper scraper = new WorkerLoadScraper(workers, client, control, LOAD_SCRAPE_INTERVAL,
                System::nanoTime);
        scraper.start();
        parts.add(scraper::close);
        balanced.forEach(p -> p.readLiveLoad(scraper));
    }

    /**
     * The kv_aware policy among the configured ones (default, prefill or decode), whose credits the KV index then
     * applies; null when there is none. The index opens when a policy asks for prefix residency (kv_aware, or
     * sticky_balanced grouping by KV), so routers without one open no subscriber sockets.
     */
    private static KvAwarePolicy kvAwarePolicy(PolicyRegistry policies) {
        for (LoadBalancingPolicy p : policies.all()) {
            if (p instanceof KvAwarePolicy kvAware) {
                return kvAware;
            }
        }
        return null;
    }

    /** The cache identity of the workers whose KV-event sources the flags name; null when they name none. */
    private static CacheIdentity kvIdentity(KvEventSettings kvEvents) {
        if (kvEvents.sources().isEmpty()) {
            return null;
        }
        // --pd-kv-events names no model: its prefill workers share one tree at the fixed block size.
        return kvEvents.pdMode()
                ? new CacheIdentity(Objects.requireNonNullElse(kvEvents.model(), ""), StaticKvSources.PD_BLOCK_SIZE)
                : new CacheIdentity(kvEvents.model(), kvEvents.blockSize());
    }

    private static SessionStore openSessionStore(SessionSettings sessions, TrajectoryEnds ends)
            throws RouterStartException {
        try {
            return SessionStores.open(sessions.store(), sessions.ttl(), sessions.maxSessions(), ends);
        } catch (SessionStoreException e) {
            throw new RouterStartException(e.getMessage(), e);
        }
    }

    private static List<Worker> initialWorkers(WorkerPoolSettings config, WorkerFactory factory) {
        List<Worker> out = new ArrayList<>();
        if (config.pdMode() != PdMode.NONE) {
            for (PrefillUrl prefill : config.prefillUrls()) {
                out.addAll(factory.create(prefill.url(), WorkerRole.PREFILL, prefill.bootstrapPort()));
            }
            for (String decode : config.decodeUrls()) {
                out.addAll(factory.create(decode, WorkerRole.DECODE, null));
            }
        } else {
            for (String url : config.workerUrls()) {
                out.addAll(factory.create(url, WorkerRole.REGULAR, null));
            }
        }
        return out;
    }

    /** Upstream waits until at least one configured worker answers its health check before serving. */
    private static void awaitStartupHealth(HealthSettings config, ControlClient client, EventLoop loop,
                                           List<Worker> initial) throws RouterStartException {
        if (initial.isEmpty()) {
            return;
        }
        List<String> bases = initial.stream().map(Worker::baseUrl).distinct().toList();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(config.startupTimeoutSecs());
        StartupWait.Outcome outcome = StartupWait.untilHealthy(client, loop, bases, config.checkEndpoint(),
                Math.max(1, config.startupCheckIntervalSecs()), deadline).join();
        if (!outcome.healthy()) {
            StringBuilder hosts = new StringBuilder("[");
            for (int i = 0; i < bases.size(); i++) {
                hosts.append(i == 0 ? "\"" : ", \"").append(bases.get(i)).append('"');
            }
            throw new RouterStartException("Timeout " + config.startupTimeoutSecs() + "s waiting for hosts "
                    + hosts.append(']') + " to become healthy. Please set --router-worker-startup-timeout-secs "
                    + "(vllm_router.launch_server) or --worker-startup-timeout-secs (vllm_worker.router) to a larger value"
                    + ". Last health check: " + outcome.lastFailures(), null);
        }
    }

    private static ChannelInitializer<Channel> metricsInitializer(RouterMetrics metrics, ChannelGroup connections) {
        MetricsHandler handler = new MetricsHandler(metrics);
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
                connections.add(ch);
                ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(64 * 1024), handler);
            }
        };
    }

    private static Channel bind(EventLoopGroup group, String host, int port, ChannelInitializer<Channel> init,
                                String what) throws RouterStartException {
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(group)
                .channel(Transport.serverChannel(group))
                // As many connections as the kernel allows (net.core.somaxconn) wait to be accepted, not 1024
                // (upstream's, tokio's default): past 1024, a trainer opening thousands at once had its connections'
                // SYNs dropped and retried a second or more later (docs/perf/event-loops.md).
                .option(ChannelOption.SO_BACKLOG, NetUtil.SOMAXCONN)
                .option(ChannelOption.SO_REUSEADDR, true)
                .option(ChannelOption.RCVBUF_ALLOCATOR, acceptBatches())
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.SO_KEEPALIVE, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, CLIENT_WRITE_BUFFER)
                .childHandler(init);
        try {
            return bootstrap.bind(host, port).sync().channel();
        } catch (Exception e) {
            throw new RouterStartException("Failed to bind the " + what + " listener on " + host + ":" + port + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * Up to {@link #ACCEPTS_PER_WAKEUP} connections accepted each time the listener's loop wakes, until the queue is
     * empty. Netty 4.2's epoll listener accepts one: its handle stops when the "bytes read" (there the new socket's
     * descriptor) differ from the one byte it asked for. Under load a loop wakes every few milliseconds, so a burst of
     * thousands of connections opened at once waited up to seconds in the kernel's queue, one a wake-up
     * (docs/perf/event-loops.md).
     */
    static RecvByteBufAllocator acceptBatches() {
        return new ServerChannelRecvByteBufAllocator().respectMaybeMoreData(false)
                .maxMessagesPerRead(ACCEPTS_PER_WAKEUP);
    }

    /** How many connections, accepted or to workers, are open now (tests). */
    int openConnections() {
        return connections.size();
    }

    /** The router port's listening channel (tests). */
    Channel listener() {
        return listener;
    }

    public int port() {
        return ((InetSocketAddress) listener.localAddress()).getPort();
    }

    public int metricsPort() {
        return ((InetSocketAddress) metricsListener.localAddress()).getPort();
    }

    public String url() {
        String host = config.host();
        String shown = host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
        return "http://" + shown + ":" + port();
    }

    public void finishSession(String sessionId) {
        policies.finishSession(sessionId);
    }

    public SessionStats sessionStats() {
        return policies.sessionStats();
    }

    /** The {@code GET /sessions} answer, for callers in this JVM: the map its JSON is written from. */
    public Map<String, Object> sessionsAnswer() {
        return SessionRoutes.sessionsAnswer(policies, workers);
    }

    WorkerRegistry workers() {
        return workers;
    }

    /** The KV-event subscriptions of kv_aware; null when no configured policy is kv_aware. */
    KvSources kvSources() {
        return kvSources;
    }

    /** Stops accepting, waits up to {@link #DRAIN_TIMEOUT} for in-flight requests, then releases everything. */
    @Override
    public void close() {
        close(DRAIN_TIMEOUT);
    }

    void close(Duration drainTimeout) {
        synchronized (closeLock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        this.drainTimeout.set(drainTimeout);
        parts.close();
    }

    /** Waits up to {@code timeout} for the requests in flight to end. */
    private static void awaitInFlight(InFlightRequests inFlight, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (inFlight.count() > 0 && System.nanoTime() - deadline < 0) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        if (inFlight.count() > 0) {
            LOG.warning("Shutting down with " + inFlight.count() + " request(s) still in flight");
        }
    }

    /** Stops the event loops; a loop that no longer runs its tasks never stops, so the wait is bounded. */
    private static void stopLoops(EventLoopGroup group) {
        Future<?> stopped = group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        if (!stopped.awaitUninterruptibly(LOOPS_STOP_MILLIS)) {
            throw new IllegalStateException("The router's event loops did not stop within " + LOOPS_STOP_MILLIS
                    + " ms: one of them no longer runs its tasks");
        }
        stopped.syncUninterruptibly();
    }

    /**
     * Waits for a step of the close that an event loop carries out, and rethrows its failure. A loop that no longer
     * runs its tasks (held, or its thread ended by an Error such as a class its jar no longer holds) never carries it
     * out, so the wait is bounded: the close goes on, and ends by reporting that the loops did not stop.
     */
    private static void awaitLoop(Future<?> step, long millis, String unfinished) {
        if (step.awaitUninterruptibly(millis)) {
            step.syncUninterruptibly();
        } else {
            LOG.warning(unfinished + " within " + millis + " ms; closing the rest");
        }
    }

    /**
     * Closes every connection and waits, boundedly, until they have closed. A loop that stops with a connection
     * still open closes it itself, but io_uring's loop then tears its ring down without waiting for a receive
     * still in flight, and that receive's buffer is never released; a connection closed first closes only once its
     * pending receive has ended, so no buffer is left behind on any transport.
     */
    private static void closeAll(ChannelGroup connections) {
        connections.close().awaitUninterruptibly(CONNECTIONS_CLOSE_MILLIS);
    }
}
