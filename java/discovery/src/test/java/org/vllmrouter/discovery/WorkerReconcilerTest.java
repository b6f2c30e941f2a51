package org.vllmrouter.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.worker.WorkerRole;

class WorkerReconcilerTest {
    private final RecordingSink sink = new RecordingSink();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final WorkerReconciler workers = new WorkerReconciler(sink, new DiscoveryMetrics(new PrometheusRegistry()),
            timer, Duration.ofMillis(50));

    private static final Endpoint A = new Endpoint("http://a:1", WorkerRole.REGULAR, null);
    private static final Endpoint B = new Endpoint("http://b:1", WorkerRole.REGULAR, null);

    @AfterEach
    void stop() {
        workers.close();
        timer.shutdownNow();
    }

    @Test
    void aWorkerInItsHealthWaitHoldsUpNoOther() {
        sink.held.add(A.url());
        workers.want(A);
        workers.want(B);
        assertEquals(B, sink.registered.get(B.url()));
        assertFalse(sink.registered.containsKey(A.url()));
        sink.waiting.get(A.url()).complete(WorkerSink.Outcome.ADDED);
        assertEquals(A, sink.registered.get(A.url()));
    }

    @Test
    void unwantedDuringItsHealthWaitIsNeverRegistered() {
        sink.held.add(A.url());
        workers.want(A);
        workers.unwant(A.url());
        sink.waiting.get(A.url()).complete(WorkerSink.Outcome.ADDED);
        assertTrue(sink.registered.isEmpty());
        // Wanted again: a fresh add, not the abandoned one.
        sink.held.clear();
        workers.want(A);
        assertEquals(A, sink.registered.get(A.url()));
    }

    @Test
    void aRoleChangeReplacesTheWorker() {
        workers.want(A);
        Endpoint prefill = new Endpoint(A.url(), WorkerRole.PREFILL, 8998);
        workers.want(prefill);
        assertEquals(prefill, sink.registered.get(A.url()));
        workers.unwant(A.url());
        assertTrue(sink.registered.isEmpty());
    }

    @Test
    void aWorkerRegisteredByItsOwnerIsLeftAlone() {
        sink.registered.put(A.url(), A);
        workers.want(A);
        workers.unwant(A.url());
        assertEquals(A, sink.registered.get(A.url()));
    }

    @Test
    void anUnhealthyWorkerIsTriedAgainUntilItJoins() {
        sink.unhealthy.add(A.url());
        workers.want(A);
        assertFalse(sink.registered.containsKey(A.url()));
        sink.unhealthy.clear();
        Eventually.await("retried add", () -> sink.registered.containsKey(A.url()));
    }

    @Test
    void concurrentWantAndUnwantEndInTheLastAskedState() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            CompletableFuture<?>[] runs = new CompletableFuture<?>[4];
            for (int t = 0; t < 4; t++) {
                int thread = t;
                runs[t] = CompletableFuture.runAsync(() -> {
                    for (int i = 0; i < 2_000; i++) {
                        Endpoint e = new Endpoint("http://w" + thread + ":" + (i % 5 + 1), WorkerRole.REGULAR, null);
                        if (i % 3 == 0) {
                            workers.unwant(e.url());
                        } else {
                            workers.want(e);
                        }
                    }
                }, pool);
            }
            CompletableFuture.allOf(runs).get();
        } finally {
            pool.shutdown();
        }
        // Per URL, the last call for i in 1995..1999 (i % 5 = 0..4) was want unless i % 3 == 0 (i = 1995, 1998).
        for (int t = 0; t < 4; t++) {
            for (int i = 1995; i < 2000; i++) {
                String url = "http://w" + t + ":" + (i % 5 + 1);
                assertEquals(i % 3 != 0, sink.registered.containsKey(url), url);
            }
        }
        assertEquals(4 * 3, sink.registered.size());
    }
}
