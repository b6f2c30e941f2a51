package org.vllmrouter.server;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A worker behind TLS, as an ingress or sidecar puts vLLM behind it: terminates TLS with a given certificate and
 * relays the plain bytes to a mock worker (after Netty's HexDumpProxy example, reads paced by writes). The
 * certificate can be replaced, as a renewal by another CA would; connections open at that moment are closed, so
 * the next ones meet the new certificate.
 */
final class TlsFront implements AutoCloseable {
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final AtomicInteger handshakes = new AtomicInteger();
    private final int backendPort;
    private final Channel listener;
    private volatile SslContext certificate;

    private TlsFront(SslContext certificate, int backendPort) {
        this.certificate = certificate;
        this.backendPort = backendPort;
        this.listener = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        connections.add(ch);
                        ch.pipeline().addLast(TlsFront.this.certificate.newHandler(ch.alloc()), new Front());
                    }
                })
                .bind("localhost", 0).syncUninterruptibly().channel();
    }

    /** Serves {@code certificate} on a free port of localhost, relaying to the plain worker on {@code backendPort}. */
    static TlsFront start(SslContext certificate, int backendPort) {
        return new TlsFront(certificate, backendPort);
    }

    String url() {
        return "https://localhost:" + ((InetSocketAddress) listener.localAddress()).getPort();
    }

    /** TLS handshakes that succeeded so far. */
    int handshakes() {
        return handshakes.get();
    }

    /** Presents {@code next} from now on and closes the open connections. */
    void present(SslContext next) {
        certificate = next;
        connections.close().syncUninterruptibly();
    }

    @Override
    public void close() {
        listener.close().syncUninterruptibly();
        connections.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /**
     * The client side of the relay: connects to the worker, then forwards what the client sends. The TLS handler
     * reads by itself during the handshake, so a request can arrive before the worker connection is up: it waits for
     * the connection, in order.
     */
    private final class Front extends ChannelInboundHandlerAdapter {
        private ChannelFuture backend;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            Channel client = ctx.channel();
            backend = new Bootstrap()
                    .group(client.eventLoop())
                    .channel(NioSocketChannel.class)
                    .option(ChannelOption.AUTO_READ, false)
                    .handler(new Back(client))
                    .connect("127.0.0.1", backendPort)
                    .addListener((ChannelFutureListener) f -> {
                        if (f.isSuccess()) {
                            client.read();
                        } else {
                            client.close();
                        }
                    });
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof SslHandshakeCompletionEvent done && done.isSuccess()) {
                handshakes.incrementAndGet();
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            backend.addListener((ChannelFutureListener) connected -> {
                if (!connected.isSuccess()) {
                    ReferenceCountUtil.release(msg);
                    return;
                }
                connected.channel().writeAndFlush(msg).addListener((ChannelFutureListener) f -> {
                    if (f.isSuccess()) {
                        ctx.channel().read();
                    } else {
                        f.channel().close();
                    }
                });
            });
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (backend != null) {
                closeOnFlush(backend.channel());
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            // A client that rejects the certificate ends the handshake with an alert: expected in these tests.
            closeOnFlush(ctx.channel());
        }
    }

    /** The worker side of the relay: forwards the worker's answer to the client. */
    private static final class Back extends ChannelInboundHandlerAdapter {
        private final Channel client;

        Back(Channel client) {
            this.client = client;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.read();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            client.writeAndFlush(msg).addListener((ChannelFutureListener) f -> {
                if (f.isSuccess()) {
                    ctx.channel().read();
                } else {
                    f.channel().close();
                }
            });
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            closeOnFlush(client);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            closeOnFlush(ctx.channel());
        }
    }

    private static void closeOnFlush(Channel channel) {
        if (channel != null && channel.isActive()) {
            channel.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
