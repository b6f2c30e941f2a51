package org.vllmrouter.host;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;
import org.vllmrouter.server.RouterServer;

/**
 * A dress rehearsal of the engine in this JVM: a sticky_least_loaded router in front of one
 * in-process mock worker, both on loopback ephemeral ports; one routed chat request with a
 * session, a health check and a metrics scrape; then both stop.
 *
 * <p>{@code launch} runs it while its child JVM parses the flags with GraalPy, so the real engine
 * then starts from loaded, initialised and partly compiled classes instead of a cold JVM: the
 * start-up health probe, the server pipeline, the proxy and the metrics writer have all run once.
 * It leaves nothing behind (its sockets are closed, its metrics registry was its own), and a
 * failure only costs the time it would have saved, so failures are ignored.
 */
final class EngineRehearsal {
    private static final Logger LOG = Logger.getLogger(EngineRehearsal.class.getName());
    private static final int SOCKET_TIMEOUT_MILLIS = 5_000;

    private EngineRehearsal() {}

    /** Returns whether every step ran; false means the real engine will start cold, nothing worse. */
    static boolean run() {
        // The rehearsal's own "Router ready" lines would read as the real router's.
        Logger ours = Logger.getLogger("org.vllmrouter");
        Level previous = ours.getLevel();
        ours.setLevel(Level.WARNING);
        try (MockWorkers worker = MockWorkers.start(MockConfig.single())) {
            RouterConfig config = RouterConfig.fromJson("{\"worker_urls\":[\"" + worker.urls().get(0) + "\"],"
                    + "\"policy\":\"sticky_least_loaded\",\"host\":\"127.0.0.1\",\"port\":0,"
                    + "\"prometheus_host\":\"127.0.0.1\",\"prometheus_port\":0}");
            try (RouterServer router = RouterServer.start(config)) {
                String body = "{\"model\":\"m\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
                boolean allOk = exchange(router.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                        + "Content-Type: application/json\r\nX-Session-ID: rehearsal\r\nConnection: close\r\n"
                        + "Content-Length: " + body.length() + "\r\n\r\n" + body)
                        & exchange(router.port(), "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                        & exchange(router.metricsPort(),
                                "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
                router.finishSession("rehearsal");
                return allOk;
            }
        } catch (Exception e) {
            LOG.log(Level.FINE, "Engine rehearsal failed; the router starts cold", e);
            return false;
        } finally {
            ours.setLevel(previous);
        }
    }

    /** Sends one request, reads the answer to the end (the request asks the server to close), and
     * returns whether its status was 200. */
    private static boolean exchange(int port, String request) throws IOException {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            socket.setSoTimeout(SOCKET_TIMEOUT_MILLIS);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            byte[] answer = socket.getInputStream().readAllBytes();
            return new String(answer, 0, Math.min(answer.length, 16), StandardCharsets.US_ASCII).startsWith("HTTP/1.1 200");
        }
    }
}
