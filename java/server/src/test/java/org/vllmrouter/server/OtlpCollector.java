package org.vllmrouter.server;

import com.sun.net.httpserver.HttpServer;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/**
 * A real OTLP trace endpoint for tests: gRPC (HTTP/2 without TLS, one unary {@code Export} call per stream) or
 * HTTP/protobuf ({@code POST /v1/traces}), decoding every exported batch with the OpenTelemetry proto classes.
 */
final class OtlpCollector implements AutoCloseable {
    private final List<Span> spans = new CopyOnWriteArrayList<>();
    private final List<String> serviceNames = new CopyOnWriteArrayList<>();
    private final String endpoint;
    private final AutoCloseable server;

    private OtlpCollector(String endpoint, AutoCloseable server) {
        this.endpoint = endpoint;
        this.server = server;
    }

    /** An OTLP/gRPC collector on an ephemeral port. */
    static OtlpCollector grpc() throws InterruptedException {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        OtlpCollector[] self = new OtlpCollector[1];
        Channel listener = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(Http2FrameCodecBuilder.forServer().build(),
                                new Http2MultiplexHandler(new ChannelInitializer<Http2StreamChannel>() {
                                    @Override
                                    protected void initChannel(Http2StreamChannel stream) {
                                        stream.pipeline().addLast(new GrpcExportCall(self[0]));
                                    }
                                }));
                    }
                }).bind("127.0.0.1", 0).sync().channel();
        int port = ((InetSocketAddress) listener.localAddress()).getPort();
        self[0] = new OtlpCollector("http://127.0.0.1:" + port, () -> {
            listener.close().sync();
            group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).sync();
        });
        return self[0];
    }

    /** An OTLP/HTTP collector (protobuf bodies) on an ephemeral port. */
    static OtlpCollector http() throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        OtlpCollector collector = new OtlpCollector("http://127.0.0.1:" + server.getAddress().getPort(),
                () -> server.stop(0));
        server.createContext("/v1/traces", exchange -> {
            try (InputStream in = exchange.getRequestBody()) {
                collector.received(ExportTraceServiceRequest.parseFrom(in));
            }
            byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
            exchange.getResponseHeaders().set("Content-Type", "application/x-protobuf");
            exchange.sendResponseHeaders(200, answer.length == 0 ? -1 : answer.length);
            exchange.getResponseBody().write(answer);
            exchange.close();
        });
        server.start();
        return collector;
    }

    /** Where the router sends spans (without a path: the router adds {@code /v1/traces} over HTTP). */
    String endpoint() {
        return endpoint;
    }

    List<Span> spans() {
        return List.copyOf(spans);
    }

    List<String> serviceNames() {
        return List.copyOf(serviceNames);
    }

    /** The spans received once {@code done} holds for them, within {@code timeout}; fails the test otherwise. */
    List<Span> await(Predicate<List<Span>> done, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            List<Span> now = spans();
            if (done.test(now)) {
                return now;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("the collector did not receive the expected spans in " + timeout + ": " + spans());
    }

    private void received(ExportTraceServiceRequest request) {
        for (ResourceSpans resource : request.getResourceSpansList()) {
            resource.getResource().getAttributesList().stream().filter(a -> a.getKey().equals("service.name"))
                    .forEach(a -> serviceNames.add(a.getValue().getStringValue()));
            for (ScopeSpans scope : resource.getScopeSpansList()) {
                spans.addAll(scope.getSpansList());
            }
        }
    }

    @Override
    public void close() throws Exception {
        server.close();
    }

    /** One gRPC call on one HTTP/2 stream: a length-prefixed request message, answered with an empty response. */
    private static final class GrpcExportCall extends ChannelInboundHandlerAdapter {
        private final OtlpCollector collector;
        private final List<ByteBuf> parts = new ArrayList<>();

        GrpcExportCall(OtlpCollector collector) {
            this.collector = collector;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws IOException {
            boolean end;
            if (msg instanceof Http2DataFrame data) {
                parts.add(data.content().retain());
                end = data.isEndStream();
            } else if (msg instanceof Http2HeadersFrame headers) {
                end = headers.isEndStream();
            } else {
                end = false;
            }
            ReferenceCountUtil.release(msg);
            if (end) {
                answer(ctx);
            }
        }

        private void answer(ChannelHandlerContext ctx) throws IOException {
            ByteBuf body = Unpooled.wrappedBuffer(parts.toArray(ByteBuf[]::new));
            try {
                body.skipBytes(1);
                int length = body.readInt();
                try (InputStream in = new ByteBufInputStream(body.readSlice(length))) {
                    collector.received(ExportTraceServiceRequest.parseFrom(in));
                }
            } finally {
                body.release();
            }
            ctx.write(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200")
                    .set("content-type", "application/grpc")));
            ctx.write(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(new byte[5])));
            ctx.writeAndFlush(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().set("grpc-status", "0"), true));
        }
    }
}
