package org.vllmrouter.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import org.vllmrouter.mock.rollout.PromptContent;
import org.vllmrouter.mock.rollout.Trajectory;
import org.vllmrouter.mock.rollout.Turn;
import org.vllmrouter.mock.rollout.Workload;

/**
 * One policy against one workload over HTTP: every trajectory of the batch at once through a router, each turn a
 * {@code /v1/completions} request whose prompt is the trajectory's context ({@link PromptContent#text}) with
 * {@code X-Session-ID}, the tool's think time between turns, {@code POST /finish_session} when the trajectory ends
 * (done, abandoned or failed). An abandoned turn is streamed and its connection closed once it has generated its
 * tokens, as a trainer drops a stale rollout. Nothing blocks a thread while a turn is out.
 *
 * <p>Times are measured on the wall clock and reported in model seconds (divided by the workers' time scale), so a
 * live result reads like a simulated one. The prefix hit rate comes from the answers' {@code cached_tokens}; busy
 * time, preemptions and recomputed tokens from the mock workers' {@code GET /engine_stats}. Against real vLLM
 * ({@link Target#realVllm}) the prompts are words its model reads one token each ({@link PromptContent#words}), every
 * turn generates its full output ({@code ignore_eos}: a random-weight model may sample its end token anywhere), and
 * there are no engine stats to read (those figures are 0; the caller reads vLLM's own {@code /metrics}).
 */
public final class LiveRollout {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A turn not answered in this long (wall time) counts as an error. */
    private static final Duration TURN_TIMEOUT = Duration.ofMinutes(10);

    /** Where and how: the router, the workers behind it (for their stats), their time scale, and what they are. */
    public record Target(URI router, List<URI> workers, double timeScale, String model, boolean realVllm) {
        public Target {
            if (!(timeScale > 0) || Double.isInfinite(timeScale)) {
                throw new IllegalArgumentException("--time-scale must be > 0, got " + timeScale);
            }
            workers = List.copyOf(workers);
        }
    }

    /**
     * What one mock worker's engine model did over the run: the most KV blocks its running requests held at once,
     * its preemptions, and how often and by how many modelled seconds it fell too far behind the wall clock to catch
     * up (the machine did not keep up at this time scale).
     */
    public record WorkerEngine(URI worker, int peakUsedBlocks, long preemptions, long fellBehind,
                               double behindSeconds) {
    }

    /**
     * One trajectory of a live run: the workers that answered it (their {@code worker_id}, in order, a worker again
     * only after another; a streamed turn's worker is not told), its start from the batch's first start and its
     * latency, in model seconds.
     */
    public record TrajectoryPlacement(String sessionId, String group, List<String> workers, int turns, double start,
                                      double latency) {
    }

    private static final class Run {
        final Trajectory trajectory;
        final List<String> workers = Collections.synchronizedList(new ArrayList<>());
        int turnsSent;
        long start;
        long end;

        Run(Trajectory trajectory) {
            this.trajectory = trajectory;
        }
    }

    private final Workload workload;
    private final Target target;
    private final HttpClient client;
    private final AtomicLong turns = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong promptTokens = new AtomicLong();
    private final AtomicLong cachedTokens = new AtomicLong();
    private final AtomicInteger done = new AtomicInteger();
    private final List<Double> turnLatencies = Collections.synchronizedList(new ArrayList<>());
    private final List<WorkerEngine> workerEngines = new ArrayList<>();
    private final List<TrajectoryPlacement> placements = new ArrayList<>();

    public LiveRollout(Workload workload, Target target) {
        this.workload = workload;
        this.target = target;
        this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
    }

    /**
     * Drives the batch to its end and returns what {@code policy} did at {@code pressure}; {@code trajectoryDone}
     * hears the number of trajectories finished so far after each one.
     */
    public SimulationResult run(String policy, String pressure, int kvBlocksPerWorker, IntConsumer trajectoryDone)
            throws IOException, InterruptedException {
        List<Run> runs = new ArrayList<>();
        List<HttpRequest> openings = new ArrayList<>();
        for (Trajectory t : workload.trajectories()) {
            runs.add(new Run(t));
            openings.add(request(t, t.turns().get(0)));
        }
        // Every opening request is built before the batch starts, as a trainer's are ready when it starts its batch.
        long opened = System.nanoTime();
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            all.add(turn(runs.get(i), 0, openings.get(i), opened)
                    .thenRun(() -> trajectoryDone.accept(done.incrementAndGet())));
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
        return result(policy, pressure, kvBlocksPerWorker, runs);
    }

    /**
     * Sends turn {@code k} ({@code request}) once its think time, counted from {@code thinkFrom}, is over. The request
     * is built before: at a time scale below 1 the driver's own work would otherwise stretch every think time by that
     * work divided by the scale, which a trainer at real time does not see.
     */
    private CompletableFuture<Void> turn(Run run, int k, HttpRequest request, long thinkFrom) {
        Turn turn = run.trajectory.turns().get(k);
        long waitNanos = thinkFrom + (long) (turn.delaySeconds() * target.timeScale() * 1e9) - System.nanoTime();
        return CompletableFuture.runAsync(() -> { },
                        CompletableFuture.delayedExecutor(Math.max(0, waitNanos), TimeUnit.NANOSECONDS))
                .thenCompose(v -> {
                    if (k == 0) {
                        run.start = System.nanoTime();
                    }
                    turns.incrementAndGet();
                    run.turnsSent++;
                    long sent = System.nanoTime();
                    return send(run, turn, request).thenApply(answered -> {
                        turnLatencies.add((System.nanoTime() - sent) / (target.timeScale() * 1e9));
                        return answered;
                    });
                })
                .exceptionally(e -> false)
                .thenCompose(answered -> {
                    long answeredAt = System.nanoTime();
                    if (!answered) {
                        errors.incrementAndGet();
                    }
                    if (answered && !turn.abandoned() && k + 1 < run.trajectory.turns().size()) {
                        return turn(run, k + 1, request(run.trajectory, run.trajectory.turns().get(k + 1)),
                                answeredAt);
                    }
                    run.end = answeredAt;
                    return finishSession(run.trajectory.sessionId());
                });
    }

    /** The request of {@code turn} of {@code t}. */
    private HttpRequest request(Trajectory t, Turn turn) {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", target.model());
        body.put("prompt", target.realVllm() ? PromptContent.words(t, turn.promptTokens())
                : PromptContent.text(t, turn.promptTokens()));
        body.put("temperature", 0);
        if (target.realVllm()) {
            body.put("ignore_eos", true);
        }
        // An abandoned turn's full length is unknown: the client leaves after its tokens, well before this.
        body.put("max_tokens", turn.abandoned() ? 2 * turn.outputTokens() + 256 : turn.outputTokens());
        if (turn.abandoned()) {
            body.put("stream", true);
        }
        return HttpRequest.newBuilder(target.router().resolve("/v1/completions"))
                .timeout(TURN_TIMEOUT)
                .header("Content-Type", "application/json")
                .header("X-Session-ID", t.sessionId())
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                .build();
    }

    /** Sends {@code request}, one turn; true once it is answered (or, abandoned, once its tokens were generated). */
    private CompletableFuture<Boolean> send(Run run, Turn turn, HttpRequest request) {
        if (turn.abandoned()) {
            return client.sendAsync(request, HttpResponse.BodyHandlers.ofPublisher()).thenCompose(r -> {
                LeaveAfter reader = new LeaveAfter(turn.outputTokens(), target.realVllm());
                r.body().subscribe(reader);
                return r.statusCode() == 200 ? reader.left : reader.left.thenApply(left -> false);
            });
        }
        return client.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray()).thenApply(r -> answered(run, r));
    }

    private boolean answered(Run run, HttpResponse<byte[]> response) {
        if (response.statusCode() != 200) {
            return false;
        }
        try {
            JsonNode answer = JSON.readTree(response.body());
            String worker = answer.path("worker_id").asText("");
            boolean moved = run.workers.isEmpty() || !worker.equals(run.workers.get(run.workers.size() - 1));
            if (!worker.isEmpty() && moved) {
                run.workers.add(worker);
            }
            JsonNode usage = answer.path("usage");
            promptTokens.addAndGet(usage.path("prompt_tokens").asLong());
            cachedTokens.addAndGet(usage.path("prompt_tokens_details").path("cached_tokens").asLong());
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Reads an SSE completion line by line and cancels it (the client closes its connection) once {@code tokens} have
     * arrived; {@link #left} completes then, or when the stream ends first. A mock worker's token is one character; a
     * real vLLM's is one frame (it streams a frame per token, of however many characters).
     */
    private static final class LeaveAfter implements Flow.Subscriber<List<ByteBuffer>> {
        final CompletableFuture<Boolean> left = new CompletableFuture<>();
        private final int tokens;
        private final boolean framePerToken;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();
        private int received;
        private Flow.Subscription subscription;

        LeaveAfter(int tokens, boolean framePerToken) {
            this.tokens = tokens;
            this.framePerToken = framePerToken;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> buffers) {
            for (ByteBuffer b : buffers) {
                while (b.hasRemaining() && !left.isDone()) {
                    byte c = b.get();
                    if (c == '\n') {
                        line(line.toString(StandardCharsets.UTF_8));
                        line.reset();
                    } else {
                        line.write(c);
                    }
                }
            }
        }

        private void line(String text) {
            if (!text.startsWith("data: {")) {
                return;
            }
            try {
                String piece = JSON.readTree(text.substring(6)).path("choices").path(0).path("text").asText("");
                received += framePerToken ? 1 : piece.codePointCount(0, piece.length());
            } catch (IOException e) {
                return;
            }
            if (received >= tokens) {
                subscription.cancel();
                left.complete(true);
            }
        }

        @Override
        public void onError(Throwable error) {
            left.complete(false);
        }

        @Override
        public void onComplete() {
            left.complete(true);
        }
    }

    private CompletableFuture<Void> finishSession(String sessionId) {
        HttpRequest request = HttpRequest.newBuilder(target.router().resolve("/finish_session?session_id="
                        + URLEncoder.encode(sessionId, StandardCharsets.UTF_8)))
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.noBody())
                .build();
        return client.sendAsync(request, HttpResponse.BodyHandlers.discarding())
                .handle((r, e) -> null);
    }

    private SimulationResult result(String policy, String pressure, int kvBlocksPerWorker, List<Run> runs)
            throws IOException, InterruptedException {
        double scale = target.timeScale() * 1e9;
        long batchStart = Long.MAX_VALUE;
        for (Run run : runs) {
            batchStart = Math.min(batchStart, run.start);
        }
        double makespan = 0;
        double[] trajectoryLatency = new double[runs.size()];
        Map<String, double[]> groupSpan = new HashMap<>();
        for (int i = 0; i < runs.size(); i++) {
            Run run = runs.get(i);
            double start = (run.start - batchStart) / scale;
            double end = (run.end - batchStart) / scale;
            makespan = Math.max(makespan, end);
            trajectoryLatency[i] = end - start;
            placements.add(new TrajectoryPlacement(run.trajectory.sessionId(), run.trajectory.group(),
                    List.copyOf(run.workers), run.turnsSent, start, end - start));
            double[] span = groupSpan.computeIfAbsent(run.trajectory.group(),
                    g -> new double[] {Double.POSITIVE_INFINITY, 0});
            span[0] = Math.min(span[0], start);
            span[1] = Math.max(span[1], end);
        }
        double[] groupLatency = groupSpan.values().stream().mapToDouble(s -> s[1] - s[0]).toArray();
        double busiest = 0;
        double busy = 0;
        long recomputed = 0;
        long preemptions = 0;
        for (URI worker : target.realVllm() ? List.<URI>of() : target.workers()) {
            JsonNode stats = engineStats(worker);
            double seconds = stats.path("busy_seconds").asDouble();
            busiest = Math.max(busiest, seconds);
            busy += seconds;
            recomputed += stats.path("recomputed_tokens").asLong();
            preemptions += stats.path("preemptions").asLong();
            workerEngines.add(new WorkerEngine(worker, stats.path("peak_used_blocks").asInt(),
                    stats.path("preemptions").asLong(), stats.path("fell_behind").asLong(),
                    stats.path("behind_seconds").asDouble()));
        }
        double meanBusy = target.workers().isEmpty() ? 0 : busy / target.workers().size();
        long prompt = promptTokens.get();
        Percentiles groups = new Percentiles(groupLatency);
        Percentiles trajectories = new Percentiles(trajectoryLatency);
        Percentiles turnLatency;
        synchronized (turnLatencies) {
            turnLatency = new Percentiles(turnLatencies.stream().mapToDouble(Double::doubleValue).toArray());
        }
        return new SimulationResult(policy, pressure, target.workers().size(), kvBlocksPerWorker, makespan,
                groups.at(50), groups.at(90), groups.max(), trajectories.at(50), trajectories.at(90),
                turnLatency.at(50), turnLatency.at(90),
                prompt == 0 ? 0 : (double) cachedTokens.get() / prompt, recomputed,
                meanBusy == 0 ? 0 : busiest / meanBusy, preemptions, turns.get(), errors.get(),
                Arrays.stream(groupLatency).boxed().toList());
    }

    /** Every trajectory of the run, in the workload's order; after {@link #run}. */
    public List<TrajectoryPlacement> placements() {
        return List.copyOf(placements);
    }

    /** Each mock worker's engine figures, in the order of the target's workers; after {@link #run} (none for vLLM). */
    public List<WorkerEngine> workerEngines() {
        return List.copyOf(workerEngines);
    }

    private JsonNode engineStats(URI worker) throws IOException, InterruptedException {
        HttpResponse<byte[]> r = client.send(HttpRequest.newBuilder(worker.resolve("/engine_stats"))
                .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
        if (r.statusCode() != 200) {
            throw new IOException(worker + "/engine_stats answered " + r.statusCode()
                    + "; the workers must run the engine model (--engine-model)");
        }
        return JSON.readTree(r.body());
    }
}
