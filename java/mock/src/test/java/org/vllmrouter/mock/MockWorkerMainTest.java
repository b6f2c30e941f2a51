package org.vllmrouter.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The command line: argument parsing, the ready line, lifeline and SIGTERM exits. */
class MockWorkerMainTest {

    private static Process spawn(String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        // Start-up speed matters more than peak speed here (the machine is shared).
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(MockWorkerMain.class.getName());
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    }

    private static JsonNode firstLine(Process p) throws Exception {
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        return Http.JSON.readTree(out.readLine());
    }

    @Test
    void readyLineThenExitOnLifelineEof() throws Exception {
        Process p = spawn("--count", "2", "--lifeline", "--worker-knob", "1:worker-id=w1", "--capture-requests");
        try {
            JsonNode ready = firstLine(p);
            assertEquals("ready", ready.get("event").asText());
            assertEquals(2, ready.get("ports").size());
            assertEquals(2, ready.get("urls").size());
            String url1 = ready.get("urls").get(1).asText();
            assertEquals("http://127.0.0.1:" + ready.get("ports").get(1).asInt(), url1);
            assertEquals("w1", Http.get(url1 + "/health").headers().firstValue("x-worker-id").orElseThrow());
            Http.post(url1 + "/v1/completions", "{\"prompt\":\"x\"}");
            JsonNode captured = Http.json(Http.get(url1 + "/captured_requests"));
            assertEquals("/v1/completions", captured.get(captured.size() - 1).get("path").asText());
            p.getOutputStream().close();
            assertTrue(p.waitFor(10, TimeUnit.SECONDS), "lifeline EOF must end the process");
            assertEquals(0, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void sigtermExitsZero() throws Exception {
        Process p = spawn("--count", "1");
        try {
            assertEquals("ready", firstLine(p).get("event").asText());
            p.destroy();
            assertTrue(p.waitFor(10, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void crashOnRequestEndsTheProcessOnceEveryWorkerIsDown() throws Exception {
        Process p = spawn("--count", "1", "--crash-on-request");
        try {
            String url = firstLine(p).get("urls").get(0).asText();
            assertThrows(java.io.IOException.class, () -> Http.post(url + "/v1/completions", "{\"prompt\":\"x\"}"));
            assertTrue(p.waitFor(10, TimeUnit.SECONDS));
            assertEquals(1, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void badArgumentsPrintAnErrorLineAndExit2() throws Exception {
        Process p = spawn("--count", "1", "--status-code", "abc");
        try {
            JsonNode line = firstLine(p);
            assertEquals("error", line.get("event").asText());
            assertTrue(line.get("message").asText().contains("status-code"));
            assertTrue(p.waitFor(10, TimeUnit.SECONDS));
            assertEquals(2, p.exitValue());
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void parsesPortsKnobsAndPerWorkerKnobs() {
        assertEquals(List.of(8001, 8002, 8003, 8004), MockWorkerMain.parsePorts("8001-8004"));
        assertEquals(List.of(8001, 8002, 8007), MockWorkerMain.parsePorts("8001,8002,8007"));
        assertEquals(List.of(9, 10, 20), MockWorkerMain.parsePorts("9-10,20"));

        MockWorkerMain.Options o = MockWorkerMain.parse(new String[] {"--ports", "8001-8003", "--hang",
                "--decode-us-per-token=40", "--worker-knob", "2:status-code=503", "--lifeline"});
        assertTrue(o.lifeline());
        assertEquals(3, o.config().ports().size());
        Knobs k0 = o.config().knobsFor(0);
        Knobs k2 = o.config().knobsFor(2);
        assertTrue(k0.hang());
        assertEquals(40, k0.decodeUsPerToken());
        assertEquals(0, k0.captureLimit());
        assertEquals(200, k0.statusCode());
        assertEquals(503, k2.statusCode());

        assertThrows(IllegalArgumentException.class, () -> MockWorkerMain.parse(new String[] {"--hang"}));
        assertThrows(IllegalArgumentException.class,
                () -> MockWorkerMain.parse(new String[] {"--count", "2", "--ports", "1"}));
        assertThrows(IllegalArgumentException.class,
                () -> MockWorkerMain.parse(new String[] {"--count", "1", "--worker-knob", "3:hang=true"}));
        assertThrows(IllegalArgumentException.class,
                () -> MockWorkerMain.parse(new String[] {"--count", "1", "--worker-knob", "0:nope=1"}));
        assertThrows(IllegalArgumentException.class, () -> MockWorkerMain.parsePorts("9-8"));
    }

    @Test
    void parsesTheKvEventKnobs() {
        MockWorkerMain.Options o = MockWorkerMain.parse(new String[] {"--count", "2", "--kv-events", "--kv-topic", "kv",
                "--cpu-cache-blocks", "64", "--kv-replay-topic-frame", "--worker-knob", "1:kv-drop-next=2",
                "--worker-knob", "1:kv-hash-bytes=true"});
        Knobs k0 = o.config().knobsFor(0);
        Knobs k1 = o.config().knobsFor(1);
        assertTrue(k0.kvEvents());
        assertEquals("kv", k0.kvTopic());
        assertEquals(64, k0.cpuCacheBlocks());
        assertTrue(k0.kvReplayTopicFrame());
        assertEquals(0, k0.kvDropNext());
        assertEquals(2, k1.kvDropNext());
        assertTrue(k1.kvHashBytes());
        assertTrue(!new Knobs().kvEvents(), "off by default");
        assertThrows(IllegalArgumentException.class,
                () -> MockWorkerMain.parse(new String[] {"--count", "1", "--kv-malformed-next", "-1"}));
    }
}
