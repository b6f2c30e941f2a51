package org.vllmrouter.core.worker;

import java.util.ArrayList;
import java.util.List;

/**
 * Whether a worker's engine is paused by a relayed {@code /pause} (until a relayed {@code /resume}), and who waits
 * for it to resume. A pause is not a failure: the worker stays healthy and keeps its sessions; a request chosen for
 * it waits here instead of being sent, failed or moved (vLLM's KEEP semantics, applied before the request leaves the
 * router). Waiters run on the thread that resumes the gate, so they hand their work to their own thread.
 */
public final class PauseGate {
    private volatile boolean paused;
    private List<Runnable> waiters = new ArrayList<>();

    public boolean isPaused() {
        return paused;
    }

    public synchronized void pause() {
        paused = true;
    }

    /** Ends the pause and runs every waiter once. */
    public void resume() {
        List<Runnable> released;
        synchronized (this) {
            if (!paused) {
                return;
            }
            paused = false;
            released = waiters;
            waiters = new ArrayList<>();
        }
        released.forEach(Runnable::run);
    }

    /** Runs {@code onResume} once the gate is open: now when it is, else when the pause ends. */
    public void whenOpen(Runnable onResume) {
        synchronized (this) {
            if (paused) {
                waiters.add(onResume);
                return;
            }
        }
        onResume.run();
    }
}
