package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The closed-loop load harness against the mock (short run: correctness, not speed). */
class LoadMainTest {

    @Test
    void closedLoopRunMeasuresAndSendsSessionHeaders() throws Exception {
        try (MockWorkers mock = MockWorkers.start(MockConfig.single())) {
            long self = ProcessHandle.current().pid();
            LoadMain.Options o = LoadMain.parse(new String[] {"--url", mock.urls().get(0), "--concurrency", "4",
                    "--duration-s", "0.5", "--warmup-s", "0.2", "--body-bytes", "512", "--session-header",
                    "--cpu-pids", Long.toString(self)});
            LoadMain.Result r = LoadMain.run(o);
            assertTrue(r.requests() > 0, r.toText());
            assertEquals(0, r.errors(), r.toText());
            assertTrue(r.p99Micros() >= r.p50Micros() && r.p50Micros() > 0, r.toText());
            assertTrue(r.cpuMicrosPerRequest().containsKey(self), r.toText());
            List<CapturedRequest> got = mock.worker(0).captured("/v1/completions");
            assertTrue(got.stream().map(c -> c.header("x-session-id")).distinct().count() == 4);
            assertTrue(Math.abs(got.get(0).body().length - 512) <= 2);
            assertTrue(r.toJson().has("p99_us"));
        }
    }

    @Test
    void requestBodyIsValidJsonOfTheAskedSize() throws Exception {
        byte[] b = LoadMain.requestBody(2048);
        assertEquals(2048, b.length);
        assertEquals("mock", Http.JSON.readTree(b).get("model").asText());
        assertEquals("http://h:1/v1/completions", LoadMain.Options.defaults("http://h:1").url().toString());
        assertEquals("http://h:1/x", LoadMain.Options.defaults("http://h:1/x").url().toString());
        assertThrows(IllegalArgumentException.class, () -> LoadMain.parse(new String[] {"--concurrency", "2"}));
    }
}
