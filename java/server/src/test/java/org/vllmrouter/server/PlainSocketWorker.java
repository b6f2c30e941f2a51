package org.vllmrouter.server;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * A worker on a plain server socket, for tests that need the exact bytes on the wire: it serves every connection
 * until it closes, answers health checks with 200, writes {@link Answer#write} for the n-th proxied request (from
 * 1), and notes which connections carried proxied requests and their bodies.
 */
final class PlainSocketWorker implements AutoCloseable {
    /** What the worker writes for one proxied request. */
    interface Answer {
        void write(String method, int n, OutputStream out) throws IOException;
    }

    private final ServerSocket server = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
    private final Answer answer;
    private final AtomicInteger proxied = new AtomicInteger();
    private final Set<Socket> proxiedConnections = ConcurrentHashMap.newKeySet();
    private final List<String> bodies = new CopyOnWriteArrayList<>();

    PlainSocketWorker(Answer answer) throws IOException {
        this.answer = answer;
        Thread acceptor = new Thread(this::accept, "plain-socket-worker");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** A worker whose answer to the n-th proxied request is {@code answer(method, n)}, as ISO-8859-1 bytes. */
    static PlainSocketWorker answering(BiFunction<String, Integer, String> answer) throws IOException {
        return new PlainSocketWorker((method, n, out) -> out.write(answer.apply(method, n)
                .getBytes(StandardCharsets.ISO_8859_1)));
    }

    String url() {
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    int proxiedConnections() {
        return proxiedConnections.size();
    }

    /** The bodies of the proxied requests that had one, in order. */
    List<String> bodies() {
        return bodies;
    }

    /** The bytes of one answer's head, up to and including its blank line. */
    static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (head.length() < 4 || !head.substring(head.length() - 4).equals("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed after " + head);
            }
            head.append((char) b);
        }
        return head.toString();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket connection = server.accept();
                // Small, so an answer cannot wait in the worker's own socket buffer for a router that stopped reading.
                connection.setSendBufferSize(64 * 1024);
                Thread t = new Thread(() -> serve(connection), "plain-socket-worker-connection");
                t.setDaemon(true);
                t.start();
            } catch (IOException closed) {
                return;
            }
        }
    }

    private void serve(Socket connection) {
        try (Socket c = connection) {
            BufferedReader in = new BufferedReader(
                    new InputStreamReader(c.getInputStream(), StandardCharsets.ISO_8859_1));
            OutputStream out = c.getOutputStream();
            String line;
            while ((line = in.readLine()) != null) {
                String method = line.substring(0, line.indexOf(' '));
                boolean health = line.contains(" /health ");
                int length = 0;
                while (!line.isEmpty()) {
                    if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                        length = Integer.parseInt(line.substring(15).trim());
                    }
                    line = in.readLine();
                }
                char[] body = new char[length];
                for (int read = 0, n; read < length; read += n) {
                    n = in.read(body, read, length - read);
                    if (n < 0) {
                        return;
                    }
                }
                if (health) {
                    out.write("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                } else {
                    proxiedConnections.add(c);
                    if (length > 0) {
                        bodies.add(new String(body));
                    }
                    answer.write(method, proxied.incrementAndGet(), out);
                }
                out.flush();
            }
        } catch (IOException | RuntimeException closed) {
            // The router closed the connection.
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
