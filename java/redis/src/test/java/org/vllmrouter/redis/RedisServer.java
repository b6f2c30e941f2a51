package org.vllmrouter.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} of this test run on a free loopback port, without persistence (so a restart loses
 * every key, as a crashed cache would). It can be killed, paused and restarted on the same port.
 */
final class RedisServer implements TestRedis {
    private final int port;
    private final List<String> extraArgs;
    private final Path dir;
    private Process process;

    private RedisServer(int port, List<String> extraArgs) throws IOException {
        this.port = port;
        this.extraArgs = List.copyOf(extraArgs);
        this.dir = Files.createTempDirectory("redis-test-");
    }

    /** Starts a server; {@code extraArgs} are more {@code --option value} pairs (TLS, a password). */
    static RedisServer start(String... extraArgs) throws Exception {
        RedisServer server = new RedisServer(freePort(), List.of(extraArgs));
        server.startProcess();
        return server;
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress("127.0.0.1", 0));
            return socket.getLocalPort();
        }
    }

    int port() {
        return port;
    }

    @Override
    public String url() {
        return "redis://127.0.0.1:" + port;
    }

    private void startProcess() throws Exception {
        List<String> command = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port),
                "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--dir", dir.toString(), "--logfile", ""));
        command.addAll(extraArgs);
        process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("redis.log").toFile())
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!answersPing()) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server exited: " + Files.readString(dir.resolve("redis.log")));
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("redis-server did not answer on port " + port);
            }
            Thread.sleep(20);
        }
    }

    private boolean answersPing() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
            socket.setSoTimeout(2000);
            OutputStream out = socket.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] reply = in.readNBytes(1);
            return reply.length == 1 && (reply[0] == '+' || reply[0] == '-');
        } catch (IOException notYet) {
            return false;
        }
    }

    /** SIGKILL: every key is gone; clients see their connections drop. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** Starts again on the same port, empty. */
    void restart() throws Exception {
        startProcess();
    }

    /** SIGSTOP / SIGCONT: connections stay open but nothing is answered, as with a server stuck on a slow disk. */
    @Override
    public void pause() throws Exception {
        signal("STOP");
    }

    @Override
    public void resume() throws Exception {
        signal("CONT");
    }

    private void signal(String name) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + name + " failed");
        }
    }

    /** Runs one redis-cli command against this server and returns its output. */
    @Override
    public String cli(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(port)));
        command.addAll(List.of(args));
        Process cli = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(cli.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        cli.waitFor(30, TimeUnit.SECONDS);
        return out;
    }

    @Override
    public void flushAll() throws Exception {
        cli("FLUSHALL");
    }

    @Override
    public void close() throws Exception {
        if (process != null && process.isAlive()) {
            resume();
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }
}
