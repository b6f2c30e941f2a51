package org.vllmrouter.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorkers;

/**
 * The live driver over real sockets. Its router here is one engine-model mock worker itself (a router that always
 * picks that worker): the driver's side (turns, sessions, abandoning, the measures) is what is tested.
 */
class RolloutMainTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private record Outcome(int status, String out, String err) {
    }

    private static Outcome rollout(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = RolloutMain.run(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), args);
        return new Outcome(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void thePlanNamesTheWorkloadAndEachPressuresKvBlocksAndSendsNothing() throws Exception {
        Outcome o = rollout("--plan", "--workers", "2", "--groups", "3", "--samples", "2", "--pressure", "low,high");
        assertEquals(0, o.status(), o.err());
        JsonNode plan = JSON.readTree(o.out());
        assertEquals(6, plan.at("/workload/trajectories").asInt());
        JsonNode blocks = plan.get("kv_blocks_per_worker");
        assertTrue(blocks.get("low").asInt() >= blocks.get("high").asInt());
        assertEquals(WorkloadOptions.DEFAULT_POLICIES, String.join(",", plan.get("policies").valueStream()
                .map(JsonNode::asText).toList()), "with none given, the plan lists the default policies");
    }

    @Test
    void aLiveRunDrivesEveryTurnAndMeasuresFromTheAnswersAndTheWorkers(@TempDir Path dir) throws Exception {
        try (MockWorkers worker = MockWorkers.start(MockConfig.builder().count(1)
                .all(k -> k.engineModel(true).cacheBlocks(2_000).timeScale(0.3)).build())) {
            String url = worker.urls().get(0);
            String[] shape = {"--workers", "1", "--groups", "2", "--samples", "3", "--abandon", "0.3", "--seed", "4"};
            JsonNode plan = JSON.readTree(rollout(concat(shape, "--plan")).out()).get("workload");
            Path placements = dir.resolve("trajectories.jsonl");
            Outcome o = rollout(concat(shape, "--label", "other-router:round_robin", "--router", url,
                    "--worker-urls", url, "--time-scale", "0.3", "--trajectories", placements.toString()));
            assertEquals(0, o.status(), o.err());
            JsonNode root = JSON.readTree(o.out());
            assertEquals(plan, root.get("workload"));
            JsonNode r = root.get("results").get(0);
            assertEquals("other-router:round_robin", r.get("policy").asText(), "the row is named by --label");
            assertEquals(0, r.get("errors").asInt(), "an abandoned turn is no error");
            assertEquals(plan.get("turns").asInt(), r.get("turns").asInt());
            assertTrue(plan.get("abandoned").asInt() > 0);
            assertTrue(plan.get("turns").asInt() > plan.get("trajectories").asInt());
            assertTrue(r.get("prefix_hit_rate").asDouble() > 0, "a later turn finds its earlier turns cached");
            assertEquals(2, r.get("group_latencies_s").size());
            assertEquals(1.0, r.get("imbalance").asDouble(), "one worker is its own mean");
            assertTrue(r.get("makespan_s").asDouble() >= r.at("/group_latency_s/max").asDouble());
            JsonNode stats = JSON.readTree(URI.create(url + "/engine_stats").toURL());
            assertTrue(stats.get("aborted").asInt() >= 1, "an abandoned turn's client left before its end");
            JsonNode engine = r.get("worker_engines").get(0);
            assertEquals(url, engine.get("worker").asText());
            assertEquals(stats.get("peak_used_blocks").asInt(), engine.get("peak_used_blocks").asInt());
            List<JsonNode> lines = new ArrayList<>();
            for (String line : Files.readAllLines(placements)) {
                lines.add(JSON.readTree(line));
            }
            assertEquals(plan.get("trajectories").asInt(), lines.size(), "one line per trajectory");
            assertEquals(plan.get("turns").asInt(), lines.stream().mapToInt(l -> l.get("turns").asInt()).sum());
            assertTrue(lines.stream().anyMatch(l -> l.get("workers").size() == 1), lines.toString());
            for (JsonNode l : lines) {
                assertEquals("other-router:round_robin", l.get("policy").asText());
                l.get("workers").forEach(w -> assertEquals(worker.worker(0).id(), w.asText(), l.toString()));
            }
        }
    }

    @Test
    void badInputIsOneLineBeforeAnyTraffic(@TempDir Path dir) throws Exception {
        assertBad(rollout("--plan", "--policies", "fastest"), "rollout: unknown policy 'fastest'; expected one of ");
        assertBad(rollout("--plan", "--policies", "oracle"),
                "rollout: policy 'oracle' is the simulator's perfect router");
        assertBad(rollout("--plan", "--workers", "0"), "rollout: --workers must be > 0, got 0");
        assertBad(rollout("--plan", "--groups", "-1"), "rollout: --groups must be > 0, got -1");
        Path trace = dir.resolve("bad.jsonl");
        Files.writeString(trace, "{\"session_id\":\"a_0\",\"turn\":0,\"delay_s\":0,\"system_tokens\":1,"
                + "\"task_tokens\":1,\"prompt_tokens\":2,\"output_tokens\":1,\"abandoned\":false}\n{oops\n");
        assertBad(rollout("--trace", trace.toString()), "rollout: " + trace + ": trace line 2: not JSON");
        assertBad(rollout("--policies", "round_robin,random", "--router", "http://127.0.0.1:9",
                "--worker-urls", "http://127.0.0.1:9", "--workers", "1"), "rollout: a live run drives one policy");
        assertBad(rollout("--policies", "round_robin", "--workers", "2", "--router", "http://127.0.0.1:9",
                "--worker-urls", "http://127.0.0.1:9"), "rollout: a live run needs --router and one --worker-urls");
        assertBad(rollout("--policies", "round_robin", "--workers", "1", "--router", "http://127.0.0.1:9",
                "--worker-urls", "http://127.0.0.1:9", "--time-scale", "0"), "rollout: --time-scale must be > 0");
        Path placements = dir.resolve("missing").resolve("trajectories.jsonl");
        assertBad(rollout("--policies", "round_robin", "--workers", "1", "--router", "http://127.0.0.1:9",
                "--worker-urls", "http://127.0.0.1:9", "--trajectories", placements.toString()),
                "rollout: --trajectories " + placements + " cannot be written: its directory does not exist");
    }

    private static void assertBad(Outcome o, String start) {
        assertEquals(2, o.status());
        assertEquals("", o.out());
        assertEquals(1, o.err().lines().count(), o.err());
        assertTrue(o.err().startsWith(start), o.err());
    }

    private static String[] concat(String[] a, String... b) {
        String[] all = new String[a.length + b.length];
        System.arraycopy(a, 0, all, 0, a.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
