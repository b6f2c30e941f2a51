package org.vllmrouter.mock;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.vllmrouter.mock.rollout.CostConstants;
import org.vllmrouter.mock.rollout.EngineModel;
import org.vllmrouter.mock.rollout.EngineRequest;

/**
 * A worker's {@link EngineModel} run on the wall clock ({@code engine-model}): one thread per worker steps it and
 * waits out each step's modelled duration times {@code time-scale}, so a turn is answered when the model finishes it.
 * Event loops never wait on it: they hand it turns and aborts through a queue, and it hands each turn's progress back
 * to the turn's own event loop. The model's prefix cache is what the worker reports (cached tokens, KV events,
 * {@code /metrics}).
 */
final class ModelEngine implements AutoCloseable {
    static final CostConstants COSTS = CostConstants.LLAMA_8B_H100;
    /**
     * How far the thread may fall behind the modelled clock and still catch up, stepping without waiting: a wake-up
     * on a busy machine comes late by more than a short step lasts, and the model must not slow down by that much
     * each step. Further behind (the machine cannot keep up), the next step starts from now.
     */
    private static final long MAX_LAG_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    private static final long IDLE_POLL_MS = 50;

    /** What the model has done so far, published after every step for readers on other threads. */
    record Stats(int running, int waiting, int usedBlocks, int capacityBlocks, long promptTokens, long hitTokens,
                 double busySeconds, long preemptions, long recomputedTokens, long steps, long aborted,
                 int peakUsedBlocks, long fellBehind, double behindSeconds) {
    }

    private final EngineModel model;
    private final double timeScale;
    private final KvEventPublisher kvEvents;
    private final Map<String, EngineRequest.ComputeHistory> histories;
    private final LinkedBlockingQueue<Runnable> inbox = new LinkedBlockingQueue<>();
    private final Set<ModelTurn> streaming = new LinkedHashSet<>();
    private final List<KvEvent> stepEvents = new ArrayList<>();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Stats stats;
    /** Turns dropped before they finished; written by the stepping thread only. */
    private long aborted;
    /** The most blocks running requests held at once; written by the stepping thread only. */
    private int peakUsedBlocks;
    /**
     * Times the thread was too far behind the modelled clock to catch up and started the next step from now, and the
     * modelled seconds it dropped so: the model ran that much slower than the wall clock (times the time scale) while
     * the clients' think times did not. Written by the stepping thread only.
     */
    private long fellBehind;
    private double behindSeconds;

    /**
     * @param histories what each trajectory (by session id) has computed before, shared by the workers of a process
     *                  so that a turn moved to another worker counts its recomputed tokens
     */
    ModelEngine(String name, int capacityBlocks, double timeScale, KvEventPublisher kvEvents,
                Map<String, EngineRequest.ComputeHistory> histories) {
        this.model = new EngineModel(COSTS, capacityBlocks, new EngineModel.CacheListener() {
            @Override
            public void stored(EngineRequest request, int block) {
                storedBlock(request, block);
            }

            @Override
            public void removed(long hash) {
                stepEvents.add(new KvEvent.Removed(new long[] {hash}, KvEvent.GPU));
            }
        });
        this.timeScale = timeScale;
        this.kvEvents = kvEvents;
        this.histories = histories;
        publishStats();
        this.thread = Thread.ofPlatform().name("mock-engine-" + name).daemon().start(this::run);
    }

    static Map<String, EngineRequest.ComputeHistory> sharedHistories() {
        return new ConcurrentHashMap<>();
    }

    int blockSize() {
        return COSTS.blockSize();
    }

    /** Token positions the KV cache holds in all. */
    int capacityTokens() {
        return model.capacityBlocks() * COSTS.blockSize();
    }

    /** The compute history of session {@code sessionId} (a fresh one for a request without a session). */
    EngineRequest.ComputeHistory history(String sessionId) {
        return sessionId == null ? new EngineRequest.ComputeHistory()
                : histories.computeIfAbsent(sessionId, s -> new EngineRequest.ComputeHistory());
    }

    Stats stats() {
        return stats;
    }

    /** Queues {@code turn}, which fits in the KV cache ({@link #capacityTokens()}). */
    void submit(ModelTurn turn) {
        inbox.add(() -> {
            if (!model.submit(turn.request())) {
                throw new IllegalStateException("a turn larger than the KV cache was submitted");
            }
            if (turn.streams()) {
                streaming.add(turn);
            }
        });
    }

    /** Drops {@code turn} if it is still queued or running (its client went away). */
    void abort(ModelTurn turn) {
        inbox.add(() -> {
            if (model.abort(turn.request())) {
                aborted++;
            }
            streaming.remove(turn);
        });
    }

    @Override
    public void close() {
        running = false;
        thread.interrupt();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        long deadline = System.nanoTime();
        try {
            while (running) {
                Runnable task = model.hasWork() ? inbox.poll() : inbox.poll(IDLE_POLL_MS, TimeUnit.MILLISECONDS);
                while (task != null) {
                    task.run();
                    task = inbox.poll();
                }
                if (!model.hasWork()) {
                    deadline = System.nanoTime();
                    publishStats();
                    continue;
                }
                long stepNanos = (long) (model.startStep() * timeScale * 1e9);
                peakUsedBlocks = Math.max(peakUsedBlocks, model.usedBlocks());
                long now = System.nanoTime();
                if (now - deadline > MAX_LAG_NANOS) {
                    fellBehind++;
                    behindSeconds += (now - deadline) / (timeScale * 1e9);
                    deadline = now;
                }
                deadline += stepNanos;
                for (long left = deadline - now; left > 0 && running; left = deadline - System.nanoTime()) {
                    LockSupport.parkNanos(left);
                }
                List<EngineRequest> done = model.finishStep();
                if (kvEvents != null && !stepEvents.isEmpty()) {
                    kvEvents.publish(List.copyOf(stepEvents));
                }
                stepEvents.clear();
                for (ModelTurn turn : streaming) {
                    turn.progressed();
                }
                for (EngineRequest r : done) {
                    ModelTurn turn = (ModelTurn) r.tag();
                    streaming.remove(turn);
                    turn.finished();
                }
                publishStats();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void storedBlock(EngineRequest request, int block) {
        int size = COSTS.blockSize();
        int[] tokens = Arrays.copyOfRange(((ModelTurn) request.tag()).tokens(), block * size, (block + 1) * size);
        Long parent = block == 0 ? null : request.blockHash(block - 1);
        stepEvents.add(new KvEvent.Stored(new long[] {request.blockHash(block)}, parent, tokens, size, KvEvent.GPU));
    }

    private void publishStats() {
        stats = new Stats(model.runningCount(), model.waitingCount(), model.usedBlocks(), model.capacityBlocks(),
                model.promptTokens(), model.hitTokens(), model.busySeconds(), model.preemptions(),
                model.recomputedTokens(), model.steps(), aborted, peakUsedBlocks, fellBehind, behindSeconds);
    }
}
