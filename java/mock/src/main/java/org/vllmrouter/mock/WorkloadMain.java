package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A multi-turn workload in the style of an RL/agentic trainer: each session sends T turns whose
 * prompt is the whole conversation so far plus a new user message, with {@code X-Session-ID},
 * then releases the session with {@code POST /finish_session?session_id=}. It records which
 * worker answered each turn ({@code X-Worker-Id}), cached tokens and latency.
 *
 * <pre>
 * WorkloadMain --router URL [--sessions N] [--turns T] [--concurrency C] [--prompt-tokens P]
 *              [--output-tokens O] [--api chat|completions] [--model M] [--api-key KEY]
 *              [--no-finish] [--json] [--progress]
 * </pre>
 * {@code --progress} writes {@code turns DONE/PLANNED} lines on stderr while the workload runs, for a caller that
 * shows progress.
 * With the mock's tokenizer (3 bytes per token) a user message of P two-letter words is P tokens.
 */
public final class WorkloadMain {

    /** Workload shape; {@link #defaults(String)} gives the command-line defaults. */
    public record Options(String router, int sessions, int turns, int concurrency, int promptTokens,
                          int outputTokens, boolean chat, String model, String apiKey, boolean finish,
                          boolean json, String sessionPrefix, Duration requestTimeout, boolean progress) {

        public static Options defaults(String router) {
            return new Options(router, 8, 4, 8, 128, 16, true, "mock", null, true, false,
                    "wl-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xFFFFFFFFL),
                    Duration.ofSeconds(60), false);
        }

        public Options withShape(int sessions, int turns, int concurrency) {
            return new Options(router, sessions, turns, concurrency, promptTokens, outputTokens, chat, model,
                    apiKey, finish, json, sessionPrefix, requestTimeout, progress);
        }

        public Options withTokens(int prompt, int output) {
            return new Options(router, sessions, turns, concurrency, prompt, output, chat, model,
                    apiKey, finish, json, sessionPrefix, requestTimeout, progress);
        }

        public Options withApi(boolean useChat) {
            return new Options(router, sessions, turns, concurrency, promptTokens, outputTokens, useChat, model,
                    apiKey, finish, json, sessionPrefix, requestTimeout, progress);
        }

        public Options withFinish(boolean release) {
            return new Options(router, sessions, turns, concurrency, promptTokens, outputTokens, chat, model,
                    apiKey, release, json, sessionPrefix, requestTimeout, progress);
        }

        Options validated() {
            if (router == null || !router.startsWith("http")) {
                throw new IllegalArgumentException("--router must be an http URL, got " + router);
            }
            if (sessions < 1 || turns < 1 || concurrency < 1 || promptTokens < 1 || outputTokens < 0) {
                throw new IllegalArgumentException(
                        "sessions, turns, concurrency and prompt-tokens must be >= 1, output-tokens >= 0");
            }
            return this;
        }
    }

    /** One answered (or failed) turn. */
    private record Turn(int session, int turn, String worker, int status, long micros, int promptTokens,
                        int cachedTokens) {}

    private WorkloadMain() {}

    public static void main(String[] args) {
        Options opts;
        try {
            opts = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("workload: " + e.getMessage());
            System.err.println("usage: WorkloadMain --router URL [--sessions N] [--turns T] [--concurrency C]"
                    + " [--prompt-tokens P] [--output-tokens O] [--api chat|completions] [--model M]"
                    + " [--api-key KEY] [--no-finish] [--json] [--progress]");
            System.exit(2);
            return;
        }
        WorkloadResult r = run(opts);
        System.out.print(opts.json() ? r.toJson() + "\n" : r.toText());
        System.exit(r.errors() == 0 ? 0 : 1);
    }

    static Options parse(String[] args) {
        String router = null;
        int sessions = 8, turns = 4, concurrency = -1, prompt = 128, output = 16;
        boolean chat = true, finish = true, json = false, progress = false;
        String model = "mock", apiKey = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--no-finish" -> finish = false;
                case "--finish" -> finish = true;
                case "--json" -> json = true;
                case "--progress" -> progress = true;
                default -> {
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException("unknown option or missing value: " + a);
                    }
                    String v = args[++i];
                    switch (a) {
                        case "--router" -> router = v.endsWith("/") ? v.substring(0, v.length() - 1) : v;
                        case "--sessions" -> sessions = intArg(a, v);
                        case "--turns" -> turns = intArg(a, v);
                        case "--concurrency" -> concurrency = intArg(a, v);
                        case "--prompt-tokens" -> prompt = intArg(a, v);
                        case "--output-tokens" -> output = intArg(a, v);
                        case "--model" -> model = v;
                        case "--api-key" -> apiKey = v;
                        case "--api" -> {
                            if (!v.equals("chat") && !v.equals("completions")) {
                                throw new IllegalArgumentException("--api is chat or completions, got " + v);
                            }
                            chat = v.equals("chat");
                        }
                        default -> throw new IllegalArgumentException("unknown option: " + a);
                    }
                }
            }
        }
        Options d = Options.defaults(router);
        Options o = new Options(router, sessions, turns, concurrency < 0 ? Math.min(sessions, 64) : concurrency,
                prompt, output, chat, model, apiKey, finish, json, d.sessionPrefix(), d.requestTimeout(), progress);
        return o.validated();
    }

    private static int intArg(String name, String v) {
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad value for " + name + ": " + v, e);
        }
    }

    /** Runs the workload to completion (in-process use: tests, demos). */
    public static WorkloadResult run(Options options) {
        Options o = options.validated();
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
        List<Turn> turns = new ArrayList<>();
        AtomicInteger nextSession = new AtomicInteger();
        AtomicInteger finishFailures = new AtomicInteger();
        Runnable turnDone = o.progress() ? new ProgressLines(o.sessions() * o.turns())::turnDone : () -> {};
        long t0 = System.nanoTime();
        // Virtual threads: C sessions in flight, each a plain sequential loop of turns.
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < o.concurrency(); c++) {
                pool.submit(() -> {
                    for (int s = nextSession.getAndIncrement(); s < o.sessions(); s = nextSession.getAndIncrement()) {
                        List<Turn> mine = runSession(client, o, s, turnDone);
                        synchronized (turns) {
                            turns.addAll(mine);
                        }
                        if (o.finish() && !finish(client, o, sessionId(o, s))) {
                            finishFailures.incrementAndGet();
                        }
                    }
                });
            }
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        return summarise(o, turns, seconds, finishFailures.get());
    }

    static String sessionId(Options o, int session) {
        return o.sessionPrefix() + "-" + session;
    }

    private static List<Turn> runSession(HttpClient client, Options o, int session, Runnable turnDone) {
        List<Turn> out = new ArrayList<>(o.turns());
        SplittableRandom words = new SplittableRandom(session * 0x9E3779B97F4A7C15L + o.sessionPrefix().hashCode());
        ArrayNode messages = Replies.JSON.createArrayNode();
        messages.addObject().put("role", "system").put("content", "You are a helpful agent.");
        StringBuilder transcript = new StringBuilder("You are a helpful agent.\n");
        for (int t = 0; t < o.turns(); t++) {
            String user = userMessage(words, o.promptTokens());
            ObjectNode body = Replies.JSON.createObjectNode();
            body.put("model", o.model());
            String path;
            if (o.chat()) {
                messages.addObject().put("role", "user").put("content", user);
                body.set("messages", messages);
                path = "/v1/chat/completions";
            } else {
                transcript.append(user).append('\n');
                body.put("prompt", transcript.toString());
                path = "/v1/completions";
            }
            body.put("max_tokens", o.outputTokens());
            HttpRequest.Builder req = HttpRequest.newBuilder(URI.create(o.router() + path))
                    .timeout(o.requestTimeout())
                    .header("Content-Type", "application/json")
                    .header("X-Session-ID", sessionId(o, session))
                    .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
            if (o.apiKey() != null) {
                req.header("Authorization", "Bearer " + o.apiKey());
            }
            long start = System.nanoTime();
            int status;
            String worker = null;
            int prompt = 0;
            int cached = 0;
            String reply = null;
            try {
                HttpResponse<String> res = client.send(req.build(), HttpResponse.BodyHandlers.ofString());
                status = res.statusCode();
                worker = res.headers().firstValue(WorkerIdentity.HEADER).orElse("unknown");
                if (status / 100 == 2) {
                    JsonNode answer = Replies.JSON.readTree(res.body());
                    JsonNode usage = answer.path("usage");
                    prompt = usage.path("prompt_tokens").asInt();
                    cached = usage.path("prompt_tokens_details").path("cached_tokens").asInt();
                    JsonNode choice = answer.path("choices").path(0);
                    reply = o.chat() ? choice.path("message").path("content").asText("")
                            : choice.path("text").asText("");
                }
            } catch (IOException e) {
                status = -1;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            long micros = (System.nanoTime() - start) / 1000;
            out.add(new Turn(session, t, worker, status, micros, prompt, cached));
            turnDone.run();
            // The assistant's answer becomes part of the history, as in a real conversation.
            if (o.chat()) {
                messages.addObject().put("role", "assistant").put("content", reply == null ? "" : reply);
            } else {
                transcript.append(reply == null ? "" : reply).append('\n');
            }
        }
        return out;
    }

    /** {@code turns DONE/PLANNED} on stderr: at most every {@link #INTERVAL_NANOS}, and always for the last turn. */
    private static final class ProgressLines {
        private static final long INTERVAL_NANOS = 200_000_000L;
        private final int planned;
        private int done;
        private long lastPrinted = System.nanoTime() - INTERVAL_NANOS;

        ProgressLines(int planned) {
            this.planned = planned;
        }

        synchronized void turnDone() {
            done++;
            long now = System.nanoTime();
            if (done == planned || now - lastPrinted >= INTERVAL_NANOS) {
                lastPrinted = now;
                System.err.println("turns " + done + "/" + planned);
            }
        }
    }

    /** {@code tokens} two-letter words: 3 bytes each, so one mock token each. */
    private static String userMessage(SplittableRandom rnd, int tokens) {
        StringBuilder sb = new StringBuilder(tokens * 3);
        for (int i = 0; i < tokens; i++) {
            if (i > 0) {
                sb.append(' ');
            }
            sb.append((char) ('a' + rnd.nextInt(26))).append((char) ('a' + rnd.nextInt(26)));
        }
        return sb.toString();
    }

    private static boolean finish(HttpClient client, Options o, String sessionId) {
        HttpRequest.Builder req = HttpRequest.newBuilder(URI.create(o.router() + "/finish_session?session_id="
                        + URLEncoder.encode(sessionId, StandardCharsets.UTF_8)))
                .timeout(Duration.ofSeconds(10))
                .POST(HttpRequest.BodyPublishers.noBody());
        if (o.apiKey() != null) {
            req.header("Authorization", "Bearer " + o.apiKey());
        }
        try {
            return client.send(req.build(), HttpResponse.BodyHandlers.discarding()).statusCode() / 100 == 2;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static WorkloadResult summarise(Options o, List<Turn> turns, double seconds, long finishFailures) {
        Map<Integer, String> firstWorker = new TreeMap<>();
        Map<String, Integer> sessionsPerWorker = new TreeMap<>();
        Map<String, Integer> turnsPerWorker = new TreeMap<>();
        LatencyHistogram latency = new LatencyHistogram();
        long errors = 0;
        long answered = 0;
        long sticky = 0;
        long prompt = 0;
        long cached = 0;
        List<Turn> ordered = new ArrayList<>(turns);
        ordered.sort((a, b) -> a.session() != b.session() ? Integer.compare(a.session(), b.session())
                : Integer.compare(a.turn(), b.turn()));
        for (Turn t : ordered) {
            latency.record(t.micros());
            if (t.status() / 100 != 2) {
                errors++;
                continue;
            }
            answered++;
            String first = firstWorker.computeIfAbsent(t.session(), s -> {
                sessionsPerWorker.merge(t.worker(), 1, Integer::sum);
                return t.worker();
            });
            if (first.equals(t.worker())) {
                sticky++;
            }
            turnsPerWorker.merge(t.worker(), 1, Integer::sum);
            prompt += t.promptTokens();
            cached += t.cachedTokens();
        }
        return new WorkloadResult(o.sessions(), o.turns(), turns.size(), errors, sessionsPerWorker, turnsPerWorker,
                answered == 0 ? 0 : (double) sticky / answered, prompt == 0 ? 0 : (double) cached / prompt,
                prompt, cached, latency.percentileMicros(0.50), latency.percentileMicros(0.99),
                seconds > 0 ? turns.size() / seconds : 0, seconds, finishFailures);
    }
}
