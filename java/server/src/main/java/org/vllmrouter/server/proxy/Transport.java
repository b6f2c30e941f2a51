package org.vllmrouter.server.proxy;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.vllmrouter.core.config.StartEnvironment;

/**
 * The socket layer under the router's event loops: io_uring where the kernel allows it, else epoll, else the JDK's
 * NIO. io_uring is the cheaper one, in CPU per proxied request and mostly in kernel time (docs/perf/event-loops.md):
 * one {@code io_uring_enter} submits a whole round's reads and writes and waits for the next completions where epoll
 * makes a syscall for each. Containers often forbid it (Docker's default seccomp profile,
 * {@code kernel.io_uring_disabled}); Netty then reports it unavailable and {@code auto} takes epoll.
 * {@code VLLM_ROUTER_TRANSPORT=epoll} keeps a router off io_uring on a machine that has it.
 *
 * <p>{@code VLLM_ROUTER_TRANSPORT} ({@code auto}, {@code io_uring}, {@code epoll}, {@code nio}) chooses; a transport
 * named there that the machine cannot run stops the router at start rather than quietly running another.
 *
 * <p>Channels are created for the group they join: {@link #clientChannel} and {@link #serverChannel} read the kind
 * from the event loop, so code that opens a connection on a loop needs to know nothing else.
 */
public enum Transport {
    // Declared in the order auto prefers them.
    IO_URING("io_uring", IoUringIoHandler.class, IoUringIoHandler::newFactory, IoUringServerSocketChannel.class,
            IoUringSocketChannel.class),
    EPOLL("epoll", EpollIoHandler.class, EpollIoHandler::newFactory, EpollServerSocketChannel.class,
            EpollSocketChannel.class),
    NIO("nio", NioIoHandler.class, NioIoHandler::newFactory, NioServerSocketChannel.class, NioSocketChannel.class);

    public static final String ENVIRONMENT_VARIABLE = StartEnvironment.TRANSPORT_VARIABLE;
    static final String AUTO = "auto";

    private final String label;
    private final Class<? extends IoHandler> ioHandler;
    private final Supplier<IoHandlerFactory> ioHandlerFactory;
    private final Class<? extends ServerChannel> serverChannel;
    private final Class<? extends SocketChannel> clientChannel;

    Transport(String label, Class<? extends IoHandler> ioHandler, Supplier<IoHandlerFactory> ioHandlerFactory,
              Class<? extends ServerChannel> serverChannel, Class<? extends SocketChannel> clientChannel) {
        this.label = label;
        this.ioHandler = ioHandler;
        this.ioHandlerFactory = ioHandlerFactory;
        this.serverChannel = serverChannel;
        this.clientChannel = clientChannel;
    }

    public String label() {
        return label;
    }

    /** Why this transport cannot run here, or empty when it can. */
    public Optional<String> unavailability() {
        Throwable cause = switch (this) {
            case IO_URING -> IoUring.isAvailable() ? null : IoUring.unavailabilityCause();
            case EPOLL -> Epoll.isAvailable() ? null : Epoll.unavailabilityCause();
            case NIO -> null;
        };
        if (cause == null) {
            return Optional.empty();
        }
        return Optional.of(cause.getMessage() != null ? cause.getMessage() : cause.getClass().getSimpleName());
    }

    /**
     * The transport that {@code requested} (the environment variable's value, {@link StartEnvironment#transport()};
     * null or blank means {@code auto})
     * names; {@code auto} is the first of io_uring, epoll and NIO that runs here.
     *
     * @throws IllegalArgumentException naming the accepted values, or why the named transport cannot run here
     */
    public static Transport resolve(String requested) {
        return resolve(requested, Transport::unavailability);
    }

    /** {@link #resolve(String)} with {@code unavailability} standing in for the machine's (tests). */
    static Transport resolve(String requested, Function<Transport, Optional<String>> unavailability) {
        String name = requested == null || requested.isBlank() ? AUTO : requested.trim().toLowerCase(Locale.ROOT);
        if (name.equals(AUTO)) {
            for (Transport t : values()) {
                if (unavailability.apply(t).isEmpty()) {
                    return t;
                }
            }
        }
        for (Transport t : values()) {
            if (t.label.equals(name)) {
                Optional<String> why = unavailability.apply(t);
                if (why.isPresent()) {
                    throw new IllegalArgumentException(ENVIRONMENT_VARIABLE + "=" + t.label
                            + ": this machine cannot run that transport (" + why.get() + ")");
                }
                return t;
            }
        }
        throw new IllegalArgumentException(ENVIRONMENT_VARIABLE + " must be one of " + AUTO + ", "
                + Arrays.stream(values()).map(Transport::label).collect(Collectors.joining(", "))
                + "; got '" + requested + "'");
    }

    public EventLoopGroup newGroup(int threads, String name) {
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true), ioHandlerFactory.get());
    }

    /** The transport whose event loops make up {@code group}. */
    public static Transport of(EventLoopGroup group) {
        if (group instanceof IoEventLoopGroup io) {
            for (Transport t : values()) {
                if (io.isIoType(t.ioHandler)) {
                    return t;
                }
            }
        }
        throw new IllegalArgumentException("Not an event loop group of a known transport: " + group);
    }

    public static Class<? extends ServerChannel> serverChannel(EventLoopGroup group) {
        return of(group).serverChannel;
    }

    public static Class<? extends SocketChannel> clientChannel(EventLoopGroup loop) {
        return of(loop).clientChannel;
    }
}
