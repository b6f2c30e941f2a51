package org.vllmrouter.core.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.RouterConfig;

class WorkerTest {

    @Test
    void dpRankSuffixIsParsedAndBaseUrlKept() {
        Worker w = Worker.builder("http://h:8000@3").build();
        assertEquals("http://h:8000@3", w.url());
        assertEquals("http://h:8000", w.baseUrl());
        assertEquals(3, w.dpRank());
        Worker plain = Worker.builder("http://user@h:8000").build();
        assertEquals(-1, plain.dpRank());
        assertEquals("http://user@h:8000", plain.baseUrl());
        Worker explicit = Worker.builder("http://h:8000").dpRank(1).build();
        assertEquals("http://h:8000@1", explicit.url());
    }

    @Test
    void aPausedWorkerStaysHealthyThroughFailedProbesAndReleasesItsWaitersOnResume() {
        Worker w = Worker.builder("http://h:1").healthThresholds(1, 1).build();
        w.pause().pause();
        w.recordHealthCheck(false);
        w.recordHealthCheck(false);
        assertTrue(w.isHealthy());
        assertTrue(w.isAvailable(), "a paused worker stays a candidate: its sessions keep their pins");
        List<String> ran = new java.util.ArrayList<>();
        w.pause().whenOpen(() -> ran.add("held"));
        assertEquals(List.of(), ran);
        w.pause().resume();
        assertEquals(List.of("held"), ran);
        w.pause().whenOpen(() -> ran.add("now"));
        assertEquals(List.of("held", "now"), ran);
        w.recordHealthCheck(false);
        assertFalse(w.isHealthy(), "once resumed, a failed probe counts again");
    }

    @Test
    void defaults() {
        Worker w = Worker.builder("http://h:1").build();
        assertEquals("unknown", w.modelId());
        assertEquals(WorkerRole.REGULAR, w.role());
        assertNull(w.bootstrapPort());
        assertTrue(w.isHealthy());
        assertTrue(w.isAvailable());
    }

    @Test
    void healthThresholdsNeedConsecutiveResults() {
        Worker w = Worker.builder("http://h:1").healthThresholds(3, 2).build();
        w.recordHealthCheck(false);
        w.recordHealthCheck(false);
        w.recordHealthCheck(true);
        w.recordHealthCheck(false);
        w.recordHealthCheck(false);
        assertTrue(w.isHealthy());
        w.recordHealthCheck(false);
        assertFalse(w.isHealthy());
        assertFalse(w.isAvailable());
        w.recordHealthCheck(true);
        w.recordHealthCheck(false);
        w.recordHealthCheck(true);
        assertFalse(w.isHealthy());
        w.recordHealthCheck(true);
        assertTrue(w.isHealthy());
    }

    @Test
    void openCircuitMakesWorkerUnavailable() {
        Worker w = Worker.builder("http://h:1")
                .circuitBreaker(new CircuitBreaker.Config(1, 1, Duration.ofHours(1), Duration.ofHours(1), true)).build();
        w.circuitBreaker().recordOutcome(false);
        assertTrue(w.isHealthy());
        assertFalse(w.isAvailable());
    }

    @Test
    void loadNeverNegative() {
        Worker w = Worker.builder("http://h:1").build();
        w.decrementLoad();
        assertEquals(0, w.load());
        w.incrementLoad();
        w.incrementLoad();
        w.decrementLoad();
        assertEquals(1, w.load());
        w.incrementProcessed();
        assertEquals(1, w.processed());
    }

    @Test
    void configuresFromItsSettings() throws Exception {
        RouterConfig cfg = RouterConfig.fromJson("{\"cb_failure_threshold\": 2, \"cb_success_threshold\": 4,"
                + " \"cb_timeout_duration_secs\": 7, \"cb_window_duration_secs\": 9, \"disable_circuit_breaker\": true}");
        CircuitBreaker.Config cb = Worker.builder("http://h:1").settings(WorkerSettings.from(cfg)).build()
                .circuitBreaker().config();
        assertEquals(new CircuitBreaker.Config(2, 4, Duration.ofSeconds(7), Duration.ofSeconds(9), false), cb);
    }

    @Test
    void rejectsBadBootstrapPort() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Worker.builder("http://h:1").bootstrapPort(0));
        assertTrue(e.getMessage().contains("between 1 and 65535"));
    }

    @Test
    void registryCandidatesFilterByRoleModelAndAvailability() {
        WorkerRegistry reg = new WorkerRegistry();
        Worker a = Worker.builder("http://a:1").modelId("m1").build();
        Worker b = Worker.builder("http://b:1").modelId("m2").build();
        Worker c = Worker.builder("http://c:1").modelId("m1").build();
        Worker p = Worker.builder("http://p:1").role(WorkerRole.PREFILL).modelId("m1").build();
        assertTrue(reg.add(a));
        assertTrue(reg.add(b));
        assertTrue(reg.add(c));
        assertTrue(reg.add(p));
        assertFalse(reg.add(Worker.builder("http://a:1").build()));
        assertEquals(List.of(a, c), reg.candidates("m1", WorkerRole.REGULAR));
        assertEquals(List.of(a, b, c), reg.candidates(null, WorkerRole.REGULAR));
        assertEquals(List.of(a, b, c), reg.candidates("not-served", WorkerRole.REGULAR));
        assertEquals(List.of(p), reg.candidates("m1", WorkerRole.PREFILL));
        a.setHealthy(false);
        c.setHealthy(false);
        assertEquals(List.of(), reg.candidates("m1", WorkerRole.REGULAR), "a served model with no live worker");
        assertEquals(List.of(a, b, c, p), reg.all());
        assertEquals(List.of(p), reg.all(WorkerRole.PREFILL));
    }

    /**
     * Whichever worker drops out (the first, one in the middle, the last, or none), the others stay in registration
     * order, and the list handed out cannot be changed by the one who gets it.
     */
    @Test
    void registryCandidatesKeepOrderWhicheverWorkerDropsOutAndAreReadOnly() {
        WorkerRegistry reg = new WorkerRegistry();
        List<Worker> all = List.of(Worker.builder("http://a:1").build(), Worker.builder("http://b:1").build(),
                Worker.builder("http://c:1").build());
        all.forEach(reg::add);
        assertEquals(all, reg.candidates(null, WorkerRole.REGULAR));
        assertThrows(UnsupportedOperationException.class,
                () -> reg.candidates(null, WorkerRole.REGULAR).add(all.get(0)));
        for (Worker out : all) {
            out.setHealthy(false);
            List<Worker> expected = all.stream().filter(w -> w != out).toList();
            List<Worker> candidates = reg.candidates(null, WorkerRole.REGULAR);
            assertEquals(expected, candidates, out.url() + " down");
            assertThrows(UnsupportedOperationException.class, () -> candidates.remove(0));
            out.setHealthy(true);
        }
        assertEquals(all, reg.all(), "the registry's own list is untouched");
    }

    @Test
    void registryRemovesEveryDpRankOfABaseUrl() {
        WorkerRegistry reg = new WorkerRegistry();
        Worker r0 = Worker.builder("http://a:1@0").build();
        Worker r1 = Worker.builder("http://a:1@1").build();
        Worker other = Worker.builder("http://a:10").build();
        reg.add(r0);
        reg.add(r1);
        reg.add(other);
        assertEquals(List.of(r0, r1), reg.removeByBaseUrl("http://a:1"));
        assertEquals(List.of(other), reg.all());
        assertTrue(reg.get("http://a:1@0").isEmpty());
        assertEquals(List.of(), reg.removeByBaseUrl("http://nope:1"));
    }

    @Test
    void removingAPausedWorkerReleasesWhatWaitedForItsResume() {
        WorkerRegistry reg = new WorkerRegistry();
        Worker w = Worker.builder("http://a:1").build();
        reg.add(w);
        w.pause().pause();
        boolean[] released = {false};
        w.pause().whenOpen(() -> released[0] = true);
        reg.removeByBaseUrl("http://a:1");
        assertTrue(released[0]);
        assertFalse(w.pause().isPaused());
    }
}
