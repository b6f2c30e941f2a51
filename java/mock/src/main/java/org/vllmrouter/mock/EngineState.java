package org.vllmrouter.mock;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The engine-level state a trainer drives between steps, with vLLM's pause semantics: while paused, new generations
 * wait to be admitted until {@link #resume}; in-flight ones are kept (KEEP: their answers are held until the resume),
 * ended at once with {@code finish_reason: "abort"} (ABORT), or let run to the end before the pause completes (WAIT).
 * The weight version, which {@code /update_weights} advances, is read when an answer is written, so each answer says
 * which weights produced its last token. Callbacks run outside the lock, on the thread that caused them.
 */
public final class EngineState {
    /** vLLM's pause modes. */
    enum Mode { KEEP, ABORT, WAIT }

    /** A generation admitted and not yet answered; {@code answer} takes whether it was aborted. */
    final class Pending {
        private final Consumer<Boolean> answer;

        private Pending(Consumer<Boolean> answer) {
            this.answer = answer;
        }
    }

    private Mode paused;
    private final List<Runnable> admissions = new ArrayList<>();
    private final Set<Pending> inFlight = new LinkedHashSet<>();
    private final List<Pending> kept = new ArrayList<>();
    private final List<Runnable> drainWaiters = new ArrayList<>();
    private final AtomicLong weightVersion = new AtomicLong();
    private volatile boolean failWeightUpdates;
    private volatile boolean asleep;

    /** Runs {@code start} now, or at the resume when the engine is paused. */
    void admit(Runnable start) {
        synchronized (this) {
            if (paused != null) {
                admissions.add(start);
                return;
            }
        }
        start.run();
    }

    Pending begin(Consumer<Boolean> answer) {
        Pending p = new Pending(answer);
        synchronized (this) {
            inFlight.add(p);
        }
        return p;
    }

    /** The generation's work is done: it is answered now, or at the resume under KEEP; not at all if aborted. */
    void complete(Pending p) {
        List<Runnable> drained = List.of();
        synchronized (this) {
            if (!inFlight.contains(p)) {
                return;
            }
            if (paused == Mode.KEEP) {
                inFlight.remove(p);
                kept.add(p);
                return;
            }
            inFlight.remove(p);
            if (inFlight.isEmpty() && !drainWaiters.isEmpty()) {
                drained = List.copyOf(drainWaiters);
                drainWaiters.clear();
            }
        }
        p.answer.accept(false);
        drained.forEach(Runnable::run);
    }

    /** Pauses; {@code paused} runs once the pause is in effect (under WAIT, once in-flight work has drained). */
    void pause(Mode mode, Runnable onPaused) {
        List<Pending> aborted = List.of();
        boolean now = true;
        synchronized (this) {
            paused = mode;
            if (mode == Mode.ABORT) {
                aborted = List.copyOf(inFlight);
                inFlight.clear();
            } else if (mode == Mode.WAIT && !inFlight.isEmpty()) {
                drainWaiters.add(onPaused);
                now = false;
            }
        }
        aborted.forEach(p -> p.answer.accept(true));
        if (now) {
            onPaused.run();
        }
    }

    /** Ends a pause: kept answers go out, then held generations start. */
    void resume() {
        List<Pending> release;
        List<Runnable> start;
        synchronized (this) {
            paused = null;
            release = List.copyOf(kept);
            kept.clear();
            start = List.copyOf(admissions);
            admissions.clear();
        }
        release.forEach(p -> p.answer.accept(false));
        start.forEach(Runnable::run);
    }

    public synchronized boolean isPaused() {
        return paused != null;
    }

    public long weightVersion() {
        return weightVersion.get();
    }

    /** A weight update: to {@code version} when given, else the next one. */
    long updateWeights(Long version) {
        return version != null ? weightVersion.updateAndGet(v -> version) : weightVersion.incrementAndGet();
    }

    /** Test knob: this worker answers {@code /update_weights} with a 500 (a failed weight sync). */
    public void failWeightUpdates(boolean fail) {
        failWeightUpdates = fail;
    }

    boolean failsWeightUpdates() {
        return failWeightUpdates;
    }

    void asleep(boolean value) {
        asleep = value;
    }

    boolean isAsleep() {
        return asleep;
    }
}
