package org.vllmrouter.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.server.RouterServer;

/**
 * The full proxy path of one request, in one JVM over loopback: a 2 KiB {@code POST /v1/completions} with an
 * {@code X-Session-ID} (1,000 sessions, round robin) through a {@link RouterServer} running
 * {@code sticky_least_loaded} in front of two backends that answer a fixed completion. The client and the backends
 * are plain blocking sockets reading into fixed buffers, so that {@code -prof gc}'s {@code gc.alloc.rate.norm}
 * (bytes allocated per request in the whole JVM) is, up to a few bytes, the router's allocation per request.
 *
 * <p>Run: {@code java -jar java/bench/target/router-bench.jar ProxyPath -f 1 -wi 5 -w 2s -i 5 -r 2s -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class ProxyPathBenchmark {
    private static final int SESSIONS = 1000;
    private static final byte[] ANSWER = answer();
    private static final byte[] CONTENT_LENGTH = "\ncontent-length:".getBytes(StandardCharsets.US_ASCII);

    private final List<ServerSocket> backends = new ArrayList<>();
    private final List<Socket> backendConnections = new ArrayList<>();
    private RouterServer router;
    private Socket client;
    private OutputStream toRouter;
    private InputStream fromRouter;
    private byte[][] requests;
    private final byte[] buffer = new byte[64 * 1024];
    private int next;

    @Setup(Level.Trial)
    public void start() throws Exception {
        // The per-session INFO line of the policy is start-up noise here, not the path measured.
        java.util.logging.Logger.getLogger("org.vllmrouter").setLevel(java.util.logging.Level.WARNING);
        StringBuilder urls = new StringBuilder();
        for (int i = 0; i < 2; i++) {
            ServerSocket backend = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
            backends.add(backend);
            Thread acceptor = new Thread(() -> accept(backend), "bench-backend-" + i);
            acceptor.setDaemon(true);
            acceptor.start();
            urls.append(i == 0 ? "" : ",").append("\"http://127.0.0.1:").append(backend.getLocalPort()).append('"');
        }
        router = RouterServer.start(RouterConfig.fromJson("{\"worker_urls\": [" + urls + "], \"host\": \"127.0.0.1\","
                + " \"port\": 0, \"prometheus_port\": 0, \"policy\": \"sticky_least_loaded\"}"));
        requests = new byte[SESSIONS][];
        String body = "{\"model\":\"mock\",\"max_tokens\":8,\"prompt\":\"" + "x".repeat(2048 - 60) + "\"}";
        for (int s = 0; s < SESSIONS; s++) {
            requests[s] = ("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "X-Session-ID: bench-" + s + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.US_ASCII);
        }
        client = new Socket(InetAddress.getLoopbackAddress(), router.port());
        client.setTcpNoDelay(true);
        toRouter = client.getOutputStream();
        fromRouter = client.getInputStream();
    }

    @TearDown(Level.Trial)
    public void stop() throws IOException {
        client.close();
        router.close();
        for (ServerSocket backend : backends) {
            backend.close();
        }
        for (Socket connection : backendConnections) {
            connection.close();
        }
    }

    @Benchmark
    public int proxiedRequest() throws IOException {
        toRouter.write(requests[next]);
        next = (next + 1) % SESSIONS;
        return readMessage(fromRouter, buffer);
    }

    private void accept(ServerSocket backend) {
        while (!backend.isClosed()) {
            try {
                Socket connection = backend.accept();
                connection.setTcpNoDelay(true);
                synchronized (backendConnections) {
                    backendConnections.add(connection);
                }
                Thread server = new Thread(() -> serve(connection), "bench-backend-connection");
                server.setDaemon(true);
                server.start();
            } catch (IOException closed) {
                return;
            }
        }
    }

    /** Answers every request on one keep-alive connection (health checks included) with the fixed completion. */
    private static void serve(Socket connection) {
        byte[] in = new byte[64 * 1024];
        try (connection) {
            InputStream input = connection.getInputStream();
            OutputStream output = connection.getOutputStream();
            while (readMessage(input, in) >= 0) {
                output.write(ANSWER);
            }
        } catch (IOException closed) {
            // the router closed the connection, or the benchmark ended
        }
    }

    /**
     * Reads one HTTP/1.1 message with a Content-Length (or none) into {@code buffer}; its length, or -1 at EOF.
     * Allocation-free, so the backends and the client add nothing to the measured allocation.
     */
    static int readMessage(InputStream input, byte[] buffer) throws IOException {
        int filled = 0;
        int headerEnd = -1;
        while (headerEnd < 0) {
            int n = input.read(buffer, filled, buffer.length - filled);
            if (n < 0) {
                return -1;
            }
            int from = Math.max(0, filled - 3);
            filled += n;
            for (int i = from; i + 3 < filled; i++) {
                if (buffer[i] == '\r' && buffer[i + 1] == '\n' && buffer[i + 2] == '\r' && buffer[i + 3] == '\n') {
                    headerEnd = i + 4;
                    break;
                }
            }
        }
        int total = headerEnd + contentLength(buffer, headerEnd);
        while (filled < total) {
            int n = input.read(buffer, filled, total - filled);
            if (n < 0) {
                return -1;
            }
            filled += n;
        }
        return total;
    }

    private static int contentLength(byte[] buffer, int headerEnd) {
        byte[] name = CONTENT_LENGTH;
        outer:
        for (int i = 0; i + name.length < headerEnd; i++) {
            for (int k = 0; k < name.length; k++) {
                if (Character.toLowerCase(buffer[i + k]) != name[k]) {
                    continue outer;
                }
            }
            int value = 0;
            for (int j = i + name.length; j < headerEnd && buffer[j] != '\r'; j++) {
                if (buffer[j] >= '0' && buffer[j] <= '9') {
                    value = value * 10 + (buffer[j] - '0');
                }
            }
            return value;
        }
        return 0;
    }

    private static byte[] answer() {
        String body = "{\"id\":\"cmpl-bench\",\"object\":\"text_completion\",\"created\":0,\"model\":\"mock\",\"choices\":"
                + "[{\"index\":0,\"text\":\" a fixed answer of the benchmark backend\",\"logprobs\":null,"
                + "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":512,\"completion_tokens\":8,"
                + "\"total_tokens\":520,\"prompt_tokens_details\":{\"cached_tokens\":384}}}";
        return ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n"
                + body).getBytes(StandardCharsets.US_ASCII);
    }
}
