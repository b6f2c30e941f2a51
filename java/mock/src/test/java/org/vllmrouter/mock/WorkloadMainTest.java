package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The workload driver against the mock directly (no router): one worker, so stickiness is 1. */
class WorkloadMainTest {

    @Test
    void chatWorkloadAgainstOneWorker() {
        try (MockWorkers mock = MockWorkers.start(MockConfig.single())) {
            WorkloadMain.Options o = WorkloadMain.Options.defaults(mock.urls().get(0))
                    .withShape(6, 4, 3).withTokens(64, 8).withFinish(false);
            WorkloadResult r = WorkloadMain.run(o);
            assertEquals(24, r.requests());
            assertEquals(0, r.errors());
            assertEquals(Map.of(mock.worker(0).id(), 6), r.sessionsPerWorker());
            assertEquals(Map.of(mock.worker(0).id(), 24), r.turnsPerWorker());
            assertEquals(1.0, r.stickiness());
            // Turns 2..4 reuse the history: well over half of all prompt tokens come from cache.
            assertTrue(r.cacheHitRate() > 0.4, "hit rate " + r.cacheHitRate());
            assertTrue(r.p99Micros() >= r.p50Micros());
            assertTrue(r.toText().contains("stickiness 1.000"));
            assertEquals(6, mock.worker(0).captured("/v1/chat/completions").stream()
                    .map(c -> c.header("x-session-id")).distinct().count());
        }
    }

    @Test
    void completionsWorkloadReleasesSessions() {
        try (MockWorkers mock = MockWorkers.start(MockConfig.single())) {
            WorkloadMain.Options o = WorkloadMain.Options.defaults(mock.urls().get(0))
                    .withShape(2, 3, 2).withApi(false);
            WorkloadResult r = WorkloadMain.run(o);
            assertEquals(6, r.requests());
            assertEquals(0, r.errors());
            assertTrue(r.cacheHitRate() > 0.3);
            // A bare vLLM worker has no /finish_session: both calls are sent and fail with 404.
            assertEquals(2, r.finishFailures());
            assertEquals(2, mock.worker(0).captured("/finish_session").size());
            assertTrue(mock.worker(0).captured("/finish_session").get(0).uri().contains("session_id=" + o.sessionPrefix()));
            assertEquals(2, r.toJson().get("sessions").asInt());
        }
    }

    @Test
    void progressLinesCountTurnsUpToThePlannedNumber() {
        try (MockWorkers mock = MockWorkers.start(MockConfig.single())) {
            WorkloadMain.Options o = WorkloadMain.parse(new String[] {"--router", mock.urls().get(0), "--sessions", "3",
                    "--turns", "4", "--concurrency", "3", "--no-finish", "--progress"});
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            PrintStream stderr = System.err;
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            try {
                WorkloadMain.run(o);
            } finally {
                System.setErr(stderr);
            }
            List<String> lines = captured.toString(StandardCharsets.UTF_8).lines().toList();
            assertTrue(!lines.isEmpty());
            int previous = 0;
            for (String line : lines) {
                assertTrue(line.matches("turns \\d+/12"), line);
                int done = Integer.parseInt(line.substring(6, line.indexOf('/')));
                assertTrue(done > previous, lines.toString());
                previous = done;
            }
            assertEquals("turns 12/12", lines.get(lines.size() - 1));
        }
    }

    @Test
    void parsesTheCommandLine() {
        WorkloadMain.Options o = WorkloadMain.parse(new String[] {"--router", "http://127.0.0.1:1/", "--sessions", "5",
                "--turns", "2", "--concurrency", "3", "--prompt-tokens", "10", "--output-tokens", "4", "--no-finish",
                "--json", "--api", "completions"});
        assertEquals("http://127.0.0.1:1", o.router());
        assertEquals(5, o.sessions());
        assertEquals(3, o.concurrency());
        assertEquals(false, o.finish());
        assertEquals(false, o.chat());
        assertTrue(o.json());
        assertEquals(false, o.progress());
        assertThrows(IllegalArgumentException.class, () -> WorkloadMain.parse(new String[] {"--sessions", "2"}));
        assertThrows(IllegalArgumentException.class,
                () -> WorkloadMain.parse(new String[] {"--router", "http://x", "--turns", "0"}));
    }

    @Test
    void histogramPercentilesAreWithinBucketError() {
        LatencyHistogram h = new LatencyHistogram();
        for (long v = 1; v <= 100_000; v++) {
            h.record(v);
        }
        assertEquals(100_000, h.count());
        assertEquals(50_000, h.percentileMicros(0.5), 50_000 * 0.016);
        assertEquals(99_000, h.percentileMicros(0.99), 99_000 * 0.016);
        assertEquals(100_000, h.maxMicros());
        LatencyHistogram other = new LatencyHistogram();
        other.record(5);
        h.add(other);
        assertEquals(100_001, h.count());
        assertEquals(0, new LatencyHistogram().percentileMicros(0.5));
    }
}
