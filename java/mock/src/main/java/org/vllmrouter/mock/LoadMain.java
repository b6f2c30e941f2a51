package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A closed-loop HTTP load generator for benchmarks: C connection slots, each a keep-alive
 * connection that sends the next request as soon as the previous answer is complete.
 * Latencies are recorded only for requests sent after the warm-up and answered before the end.
 *
 * <pre>
 * LoadMain --url URL [--concurrency C] [--duration-s D] [--warmup-s W] [--body-bytes B]
 *          [--session-header] [--io-threads N] [--cpu-pids PID,PID] [--clk-tck HZ] [--json]
 * </pre>
 * URL without a path posts to {@code /v1/completions}. {@code --session-header} gives each slot
 * its own {@code X-Session-ID}. {@code --cpu-pids} reports each process's CPU time (utime+stime
 * from /proc/PID/stat) per measured request, read at the start and end of the measured window.
 */
public final class LoadMain {

    /** Load shape; the command-line defaults are {@link #defaults(String)}. */
    public record Options(URI url, int concurrency, double durationS, double warmupS, int bodyBytes,
                          boolean sessionHeader, int ioThreads, List<Long> cpuPids, int clkTck, boolean json) {

        public static Options defaults(String url) {
            return new Options(withPath(url), 16, 10, 2, 2048, false, 1, List.of(), 100, false);
        }

        public Options with(int c, double duration, double warmup) {
            return new Options(url, c, duration, warmup, bodyBytes, sessionHeader, ioThreads, cpuPids, clkTck, json);
        }

        public Options withSessionHeader(boolean on) {
            return new Options(url, concurrency, durationS, warmupS, bodyBytes, on, ioThreads, cpuPids, clkTck, json);
        }

        private static URI withPath(String url) {
            URI u = URI.create(url);
            String path = u.getRawPath();
            return path == null || path.isEmpty() || path.equals("/") ? URI.create(stripSlash(url) + "/v1/completions") : u;
        }

        private static String stripSlash(String s) {
            return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
        }
    }

    /** What one run measured. {@code cpuMicrosPerRequest}: pid -> CPU us per measured request. */
    public record Result(long requests, long errors, double requestsPerSecond, long p50Micros, long p99Micros,
                         long p999Micros, double meanMicros, long maxMicros, Map<Long, Double> cpuMicrosPerRequest) {

        public ObjectNode toJson() {
            ObjectNode o = Replies.JSON.createObjectNode();
            o.put("requests", requests);
            o.put("errors", errors);
            o.put("requests_per_second", Math.round(requestsPerSecond * 10) / 10.0);
            o.put("p50_us", p50Micros);
            o.put("p99_us", p99Micros);
            o.put("p999_us", p999Micros);
            o.put("mean_us", Math.round(meanMicros * 10) / 10.0);
            o.put("max_us", maxMicros);
            ObjectNode cpu = o.putObject("cpu_us_per_request");
            cpuMicrosPerRequest.forEach((pid, us) -> cpu.put(Long.toString(pid), Math.round(us * 10) / 10.0));
            return o;
        }

        public String toText() {
            StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                    "%d requests (%d errors), %.0f req/s, p50 %d us, p99 %d us, p99.9 %d us, max %d us",
                    requests, errors, requestsPerSecond, p50Micros, p99Micros, p999Micros, maxMicros));
            cpuMicrosPerRequest.forEach((pid, us) -> sb.append(String.format(Locale.ROOT,
                    ", pid %d cpu %.1f us/req", pid, us)));
            return sb.toString();
        }
    }

    private LoadMain() {}

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("load: " + e.getMessage());
            System.err.println("usage: LoadMain --url URL [--concurrency C] [--duration-s D] [--warmup-s W]"
                    + " [--body-bytes B] [--session-header] [--io-threads N] [--cpu-pids P,P] [--clk-tck HZ] [--json]");
            System.exit(2);
            return;
        }
        Result r = run(o);
        System.out.println(o.json() ? r.toJson().toString() : r.toText());
        System.exit(r.requests() > 0 ? 0 : 1);
    }

    static Options parse(String[] args) {
        String url = null;
        int c = 16, body = 2048, io = 1, clk = 100;
        double dur = 10, warm = 2;
        boolean session = false, json = false;
        List<Long> pids = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--session-header" -> session = true;
                case "--json" -> json = true;
                default -> {
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException("unknown option or missing value: " + a);
                    }
                    String v = args[++i];
                    try {
                        switch (a) {
                            case "--url" -> url = v;
                            case "--concurrency" -> c = Integer.parseInt(v);
                            case "--duration-s" -> dur = Double.parseDouble(v);
                            case "--warmup-s" -> warm = Double.parseDouble(v);
                            case "--body-bytes" -> body = Integer.parseInt(v);
                            case "--io-threads" -> io = Integer.parseInt(v);
                            case "--clk-tck" -> clk = Integer.parseInt(v);
                            case "--cpu-pids" -> {
                                for (String p : v.split(",")) {
                                    if (!p.isBlank()) {
                                        pids.add(Long.parseLong(p.trim()));
                                    }
                                }
                            }
                            default -> throw new IllegalArgumentException("unknown option: " + a);
                        }
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("bad value for " + a + ": " + v, e);
                    }
                }
            }
        }
        if (url == null || !url.startsWith("http://")) {
            throw new IllegalArgumentException("--url http://HOST:PORT[/path] is required");
        }
        if (c < 1 || dur <= 0 || warm < 0 || body < 0 || io < 1 || clk < 1) {
            throw new IllegalArgumentException("concurrency, duration, io-threads, clk-tck must be positive");
        }
        Options d = Options.defaults(url);
        return new Options(d.url(), c, dur, warm, body, session, io, List.copyOf(pids), clk, json);
    }

    /** A completions request padded to about {@code bytes} bytes (the prompt carries the padding). */
    static byte[] requestBody(int bytes) {
        String head = "{\"model\":\"mock\",\"max_tokens\":1,\"prompt\":\"";
        int pad = Math.max(1, bytes - head.length() - 2);
        StringBuilder sb = new StringBuilder(bytes).append(head);
        for (int i = 0; i < pad; i++) {
            sb.append(i % 3 == 2 ? ' ' : 'x');
        }
        return sb.append("\"}").toString().getBytes(StandardCharsets.UTF_8);
    }

    public static Result run(Options o) throws InterruptedException {
        boolean epoll = Epoll.isAvailable();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(o.ioThreads(),
                epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        byte[] body = requestBody(o.bodyBytes());
        String host = o.url().getHost();
        int port = o.url().getPort() < 0 ? 80 : o.url().getPort();
        String target = o.url().getRawQuery() == null ? o.url().getRawPath()
                : o.url().getRawPath() + "?" + o.url().getRawQuery();
        CountDownLatch done = new CountDownLatch(o.concurrency());
        Window window = new Window();
        List<Slot> slots = new ArrayList<>();
        Bootstrap bootstrap = new Bootstrap().group(group)
                .channel(epoll ? EpollSocketChannel.class : NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5000);
        CpuClock cpu = new CpuClock(o.cpuPids(), o.clkTck());
        try {
            List<Channel> channels = new ArrayList<>();
            for (int i = 0; i < o.concurrency(); i++) {
                String session = o.sessionHeader() ? "load-" + i : null;
                Slot slot = new Slot(bootstrap, host, port, target, body, session, window, done);
                slots.add(slot);
                ChannelFuture connected = slot.open().awaitUninterruptibly();
                if (!connected.isSuccess()) {
                    throw new IllegalStateException("cannot connect to " + o.url() + ": " + connected.cause(),
                            connected.cause());
                }
                channels.add(connected.channel());
            }
            // The clock starts once every slot is connected, so a slow start-up does not eat the run.
            long start = System.nanoTime();
            window.set(start + (long) (o.warmupS() * 1e9), start + (long) (o.durationS() * 1e9 + o.warmupS() * 1e9));
            for (int i = 0; i < channels.size(); i++) {
                Slot slot = slots.get(i);
                Channel ch = channels.get(i);
                ch.eventLoop().execute(() -> slot.send(ch));
            }
            sleepUntil(window.measureFrom);
            cpu.start();
            sleepUntil(window.end);
            cpu.stop();
            // Slots stop on their own at the end; give the last answers a bounded time to land.
            done.await(30, TimeUnit.SECONDS);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
        LatencyHistogram all = new LatencyHistogram();
        long errors = 0;
        for (Slot s : slots) {
            all.add(s.histogram);
            errors += s.errors;
        }
        return new Result(all.count(), errors, all.count() / o.durationS(), all.percentileMicros(0.5),
                all.percentileMicros(0.99), all.percentileMicros(0.999), all.meanMicros(), all.maxMicros(),
                cpu.microsPerRequest(all.count()));
    }

    private static void sleepUntil(long nanoTime) throws InterruptedException {
        long millis = (nanoTime - System.nanoTime()) / 1_000_000;
        if (millis > 0) {
            Thread.sleep(millis);
        }
    }

    /** The measured window, set once every slot is connected. */
    private static final class Window {
        volatile long measureFrom = Long.MAX_VALUE;
        volatile long end = Long.MAX_VALUE;

        void set(long from, long until) {
            measureFrom = from;
            end = until;
        }
    }

    /**
     * One closed-loop connection. All its callbacks run on its event loop, so its histogram and
     * counters need no locking; they are read after the run has stopped. Sharable only so that a
     * reconnect can put it in the new connection's pipeline: it is never in two at once.
     */
    @io.netty.channel.ChannelHandler.Sharable
    private static final class Slot extends SimpleChannelInboundHandler<FullHttpResponse> {
        private final Bootstrap bootstrap;
        private final String host;
        private final int port;
        private final String target;
        private final byte[] body;
        private final String session;
        private final Window window;
        private final CountDownLatch done;
        final LatencyHistogram histogram = new LatencyHistogram();
        long errors;
        private long sentAt;
        private boolean finished;

        Slot(Bootstrap bootstrap, String host, int port, String target, byte[] body, String session,
             Window window, CountDownLatch done) {
            this.bootstrap = bootstrap;
            this.host = host;
            this.port = port;
            this.target = target;
            this.body = body;
            this.session = session;
            this.window = window;
            this.done = done;
        }

        ChannelFuture open() {
            return bootstrap.clone().handler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel ch) {
                    ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(64 * 1024 * 1024), Slot.this);
                }
            }).connect(host, port);
        }

        /** Replaces a connection the server closed mid-run. */
        private void reconnect() {
            if (System.nanoTime() >= window.end) {
                finish();
                return;
            }
            open().addListener((ChannelFuture f) -> {
                if (f.isSuccess()) {
                    send(f.channel());
                } else {
                    errors++;
                    // A refused connection must not spin: retry after a short pause.
                    f.channel().eventLoop().schedule(this::reconnect, 100, TimeUnit.MILLISECONDS);
                }
            });
        }

        void send(Channel ch) {
            FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, target,
                    Unpooled.wrappedBuffer(body));
            req.headers().set(HttpHeaderNames.HOST, host + ":" + port);
            req.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
            req.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
            if (session != null) {
                req.headers().set("X-Session-ID", session);
            }
            sentAt = System.nanoTime();
            ch.writeAndFlush(req);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse res) {
            long now = System.nanoTime();
            boolean measured = sentAt >= window.measureFrom && now <= window.end;
            if (res.status().code() / 100 != 2) {
                if (measured) {
                    errors++;
                }
            } else if (measured) {
                histogram.record((now - sentAt) / 1000);
            }
            if (now >= window.end) {
                finish();
                ctx.close();
            } else {
                send(ctx.channel());
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (!finished) {
                // The server closed the connection mid-run: count it and open a new one.
                errors++;
                reconnect();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }

        private void finish() {
            if (!finished) {
                finished = true;
                done.countDown();
            }
        }
    }

    /** CPU time of other processes from /proc/PID/stat (fields 14 utime and 15 stime, in clock ticks). */
    private static final class CpuClock {
        private final List<Long> pids;
        private final int clkTck;
        private final Map<Long, Long> startTicks = new LinkedHashMap<>();
        private final Map<Long, Long> endTicks = new LinkedHashMap<>();

        CpuClock(List<Long> pids, int clkTck) {
            this.pids = pids;
            this.clkTck = clkTck;
        }

        void start() {
            pids.forEach(p -> startTicks.put(p, ticks(p)));
        }

        void stop() {
            pids.forEach(p -> endTicks.put(p, ticks(p)));
        }

        Map<Long, Double> microsPerRequest(long requests) {
            Map<Long, Double> out = new LinkedHashMap<>();
            for (long p : pids) {
                Long a = startTicks.get(p);
                Long b = endTicks.get(p);
                if (a != null && b != null && a >= 0 && b >= 0 && requests > 0) {
                    out.put(p, (b - a) * 1e6 / clkTck / requests);
                }
            }
            return out;
        }

        static long ticks(long pid) {
            try {
                String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
                // The command name (field 2) may contain spaces; fields are counted after its ')'.
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                return Long.parseLong(f[11]) + Long.parseLong(f[12]);
            } catch (IOException | RuntimeException e) {
                return -1;
            }
        }
    }
}
