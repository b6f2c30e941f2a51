package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Command line for a process of mock workers:
 * {@code MockWorkerMain --ports 8001-8004 | --ports 8001,8002 | --count N [--lifeline] [knobs]}.
 *
 * <p>Prints one line on stdout once every port listens,
 * {@code {"event":"ready","ports":[...],"urls":[...],"worker_ids":[...]}}, or
 * {@code {"event":"error","message":...}} and exits 2. Exits 0 on SIGTERM/SIGINT, and on EOF of
 * stdin with {@code --lifeline}. When every worker has crashed ({@code --crash-on-request}) the
 * process exits 1, as upstream's one-worker mock does.
 */
public final class MockWorkerMain {

    static final String USAGE = """
            usage: mock-worker (--ports SPEC | --port P | --count N) [options] [knobs]
              --ports 8001-8004 | 8001,8002   one worker per port (ranges and lists mix)
              --count N                       N workers on ephemeral ports
              --host H                        bind address (127.0.0.1)
              --io-threads N                  shared event-loop threads (Netty default)
              --lifeline                      exit when stdin reaches EOF
              --capture-requests              keep the last 10000 requests (or --capture-limit N)
                                              for GET /captured_requests
              --worker-knob I:NAME=VALUE      set a knob on worker I only (repeatable)
            knobs (all workers): --worker-id ID --model NAME --latency-ms MS --prefill-us-per-token US
              --decode-us-per-token US --max-concurrency N --status-code CODE --fail-first-n N
              --random-fail-rate P --crash-on-request --health-fail-after-ms MS --unhealthy --hang
              --hang-health --slow-stream-ms MS --stream-chunks N --require-api-key KEY
              --block-size TOKENS --cache-blocks N --capture-limit N --max-payload-bytes N
              --cpu-cache-blocks N --no-server-info --metrics-text TEXT
            engine model (completions and chat from the rollout cost model, stepped on the wall clock):
              --engine-model --cache-blocks N (its KV capacity) --time-scale S (0.1: ten times faster)
            KV events (vLLM's ZeroMQ format; endpoints in GET /kv_event_sources):
              --kv-events --kv-topic T --kv-replay-topic-frame --kv-hash-bytes
              --kv-malformed-next N --kv-drop-next N --kv-restart-next
            """;

    private static volatile int exitStatus;

    private MockWorkerMain() {}

    /** Parsed command line. */
    record Options(MockConfig config, boolean lifeline) {}

    public static void main(String[] args) {
        List<String> argList = Arrays.asList(args);
        if (argList.contains("--help") || argList.contains("-h")) {
            System.out.print(USAGE);
            return;
        }
        Options opts;
        MockWorkers workers;
        try {
            opts = parse(args);
            workers = MockWorkers.start(opts.config());
        } catch (IllegalArgumentException | IllegalStateException e) {
            System.out.println(errorLine(e.getMessage()));
            System.out.flush();
            System.err.print(USAGE);
            System.exit(2);
            return;
        }
        AtomicBoolean stopping = new AtomicBoolean();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            workers.close();
            // SIGTERM would otherwise end the JVM with 143; a clean stop is a 0 exit.
            Runtime.getRuntime().halt(exitStatus);
        }, "mock-worker-shutdown"));
        for (MockWorker w : workers.workers()) {
            w.listener().closeFuture().addListener(f -> {
                if (!stopping.get() && workers.workers().stream().noneMatch(MockWorker::isListening)) {
                    exitStatus = 1;
                    new Thread(() -> System.exit(1), "mock-worker-crashed").start();
                }
            });
        }
        System.out.println(readyLine(workers));
        System.out.flush();
        if (opts.lifeline()) {
            Thread lifeline = new Thread(() -> {
                drain(System.in);
                System.exit(0);
            }, "mock-worker-lifeline");
            lifeline.setDaemon(true);
            lifeline.start();
        }
    }

    static Options parse(String[] args) {
        MockConfig.Builder b = MockConfig.builder();
        List<Integer> ports = new ArrayList<>();
        int count = 0;
        boolean lifeline = false;
        boolean capture = false;
        List<String> perWorker = new ArrayList<>();
        // Capture costs a copy per request; a standalone process (benchmarks) keeps none unless asked.
        Knobs all = new Knobs().captureLimit(0);
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument: " + a);
            }
            String name = a.substring(2);
            String inlineValue = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                inlineValue = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            switch (name) {
                case "lifeline" -> lifeline = true;
                case "capture-requests" -> capture = true;
                default -> {
                    boolean flag = Knobs.isFlag(name) && inlineValue == null;
                    String value = flag ? "true" : inlineValue != null ? inlineValue : valueOf(args, ++i, name);
                    switch (name) {
                        case "ports" -> ports.addAll(parsePorts(value));
                        case "port" -> ports.add(parsePort(value));
                        case "count" -> count = parseInt("count", value);
                        case "host" -> b.host(value);
                        case "io-threads" -> b.ioThreads(parseInt("io-threads", value));
                        case "worker-knob" -> perWorker.add(value);
                        default -> all.set(name, value);
                    }
                }
            }
        }
        if (ports.isEmpty() == (count == 0)) {
            throw new IllegalArgumentException("give either --ports/--port or --count");
        }
        if (count > 0) {
            b.count(count);
        } else {
            b.ports(ports);
        }
        if (capture && all.captureLimit() == 0) {
            all.captureLimit(10_000);
        }
        b.defaults(all);
        for (String spec : perWorker) {
            int colon = spec.indexOf(':');
            int eq = spec.indexOf('=');
            if (colon < 1 || eq < colon + 2) {
                throw new IllegalArgumentException("--worker-knob wants I:NAME=VALUE, got " + spec);
            }
            int index = parseInt("--worker-knob index", spec.substring(0, colon));
            String knob = spec.substring(colon + 1, eq);
            String value = spec.substring(eq + 1);
            new Knobs().set(knob, value);
            b.worker(index, k -> k.set(knob, value));
        }
        return new Options(b.build(), lifeline);
    }

    /** "8001-8004", "8001,8002" or a mix ("8001,8005-8006"). */
    static List<Integer> parsePorts(String spec) {
        List<Integer> out = new ArrayList<>();
        for (String part : spec.split(",")) {
            String p = part.trim();
            int dash = p.indexOf('-');
            if (dash > 0) {
                int from = parsePort(p.substring(0, dash));
                int to = parsePort(p.substring(dash + 1));
                if (to < from) {
                    throw new IllegalArgumentException("bad port range: " + p);
                }
                for (int port = from; port <= to; port++) {
                    out.add(port);
                }
            } else {
                out.add(parsePort(p));
            }
        }
        return out;
    }

    private static int parsePort(String s) {
        int p = parseInt("port", s.trim());
        if (p < 0 || p > 65_535) {
            throw new IllegalArgumentException("port out of range: " + s);
        }
        return p;
    }

    private static int parseInt(String what, String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad value for " + what + ": " + s, e);
        }
    }

    private static String valueOf(String[] args, int i, String name) {
        if (i >= args.length) {
            throw new IllegalArgumentException("--" + name + " needs a value");
        }
        return args[i];
    }

    static String readyLine(MockWorkers workers) {
        ObjectNode line = Replies.JSON.createObjectNode();
        line.put("event", "ready");
        ArrayNode ports = line.putArray("ports");
        workers.ports().forEach(ports::add);
        ArrayNode urls = line.putArray("urls");
        workers.urls().forEach(urls::add);
        ArrayNode ids = line.putArray("worker_ids");
        workers.workers().forEach(w -> ids.add(w.id()));
        return line.toString();
    }

    static String errorLine(String message) {
        return Replies.JSON.createObjectNode().put("event", "error").put("message", message).toString();
    }

    private static void drain(InputStream in) {
        byte[] buf = new byte[512];
        try {
            while (in.read(buf) >= 0) {
                // The lifeline carries no data; only its end matters.
            }
        } catch (IOException e) {
            // A broken stdin means the parent is gone: same as EOF.
        }
    }
}
