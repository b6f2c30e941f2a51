package org.vllmrouter.mock;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.vllmrouter.mock.rollout.EngineRequest;
import org.zeromq.ZContext;

/**
 * A set of mock vLLM workers, one per port, in this process. All of them share one group of
 * event loops (epoll when available, NIO otherwise), so a hundred workers cost a few threads.
 *
 * <pre>{@code
 * try (MockWorkers mock = MockWorkers.start(MockConfig.builder().count(2).build())) {
 *     String url = mock.urls().get(0);
 *     mock.worker(1).knobs().hang(true);           // worker 1 stops answering now
 *     mock.worker(0).captured("/v1/completions");  // what worker 0 received
 * }
 * }</pre>
 */
public final class MockWorkers implements AutoCloseable {

    private final EventLoopGroup group;
    private final List<MockWorker> workers;
    /** Null unless a worker publishes KV events. */
    private final ZContext zmq;

    private MockWorkers(EventLoopGroup group, List<MockWorker> workers, ZContext zmq) {
        this.group = group;
        this.workers = List.copyOf(workers);
        this.zmq = zmq;
    }

    /**
     * Binds every port of {@code config} and returns once all are listening.
     *
     * @throws IllegalStateException if a port cannot be bound (nothing is left running)
     */
    public static MockWorkers start(MockConfig config) {
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends ServerChannel> serverChannel =
                epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(config.ioThreads(), io);
        List<MockWorker> workers = new ArrayList<>();
        ZContext zmq = null;
        Map<String, EngineRequest.ComputeHistory> histories = ModelEngine.sharedHistories();
        try {
            for (int i = 0; i < config.ports().size(); i++) {
                ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
                Knobs knobs = config.knobsFor(i);
                KvEventPublisher kvEvents = null;
                if (knobs.kvEvents()) {
                    zmq = zmq == null ? new ZContext(1) : zmq;
                    kvEvents = new KvEventPublisher(zmq, config.host(), knobs, 0);
                }
                ModelEngine engine = knobs.engineModel()
                        ? new ModelEngine(Integer.toString(i), knobs.cacheBlocks(), knobs.timeScale(), kvEvents,
                                histories)
                        : null;
                MockWorker worker = new MockWorker(i, knobs, connections, kvEvents, engine);
                workers.add(worker);
                Channel listener = new ServerBootstrap()
                        .group(group)
                        .channel(serverChannel)
                        .option(ChannelOption.SO_BACKLOG, 1024)
                        // A worker killed and started again takes its port back despite TIME_WAIT connections.
                        .option(ChannelOption.SO_REUSEADDR, true)
                        .childOption(ChannelOption.TCP_NODELAY, true)
                        .childHandler(pipelineFor(worker))
                        .bind(config.host(), config.ports().get(i))
                        .syncUninterruptibly()
                        .channel();
                worker.bound(listener, config.host());
            }
        } catch (RuntimeException e) {
            new MockWorkers(group, workers, zmq).close();
            throw new IllegalStateException("mock worker could not bind: " + e.getMessage(), e);
        }
        return new MockWorkers(group, workers, zmq);
    }

    /**
     * One small handler per job: HTTP codec, body aggregation (413 above the payload limit),
     * capture, in-flight count, identity header, faults, then the API itself.
     */
    private static ChannelInitializer<SocketChannel> pipelineFor(MockWorker worker) {
        RequestCapture capture = new RequestCapture(worker);
        WorkerIdentity identity = new WorkerIdentity(worker);
        FaultInjector faults = new FaultInjector(worker);
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(SocketChannel ch) {
                worker.connections().add(ch);
                worker.accepted();
                ch.pipeline()
                        .addLast("http", new HttpServerCodec())
                        .addLast("identity", identity)
                        .addLast("aggregator", new HttpObjectAggregator(worker.knobs().maxPayloadBytes()))
                        .addLast("capture", capture)
                        .addLast("in-flight", new InFlightTracker(worker.inFlightCounter()))
                        .addLast("faults", faults)
                        .addLast("api", new MockApiHandler(worker));
            }
        };
    }

    public int size() {
        return workers.size();
    }

    public MockWorker worker(int index) {
        return workers.get(index);
    }

    public List<MockWorker> workers() {
        return workers;
    }

    /** Base URLs ({@code http://127.0.0.1:PORT}) in worker order. */
    public List<String> urls() {
        return workers.stream().map(MockWorker::url).toList();
    }

    public List<Integer> ports() {
        return workers.stream().map(MockWorker::port).toList();
    }

    /** The worker whose {@link MockWorker#id()} is {@code id}, or null. */
    public MockWorker byId(String id) {
        return workers.stream().filter(w -> w.id().equals(id)).findFirst().orElse(null);
    }

    /** Closes every listener, connection and KV-event socket and stops the event loops. */
    @Override
    public void close() {
        for (MockWorker w : workers) {
            w.crash();
            if (w.engine() != null) {
                w.engine().close();
            }
            if (w.kvEvents() != null) {
                w.kvEvents().close();
            }
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        if (zmq != null) {
            zmq.close();
        }
    }
}
