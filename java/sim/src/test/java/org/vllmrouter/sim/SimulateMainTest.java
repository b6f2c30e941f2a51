package org.vllmrouter.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimulateMainTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] SMALL = {"--workers", "4", "--groups", "4", "--samples", "4"};

    private record Outcome(int status, String out, String err) {
    }

    private static Outcome simulate(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = SimulateMain.run(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), args);
        return new Outcome(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static String[] small(String... more) {
        String[] all = new String[SMALL.length + more.length];
        System.arraycopy(SMALL, 0, all, 0, SMALL.length);
        System.arraycopy(more, 0, all, SMALL.length, more.length);
        return all;
    }

    @Test
    void jsonHasOneResultPerPolicyAndPressureWithTheAgreedKeys() throws Exception {
        Outcome o = simulate(small("--policies", "sticky_least_loaded,round_robin", "--pressure", "low,high",
                "--json"));
        assertEquals(0, o.status(), o.err());
        JsonNode results = JSON.readTree(o.out()).get("results");
        assertEquals(4, results.size());
        Set<String> keys = new TreeSet<>();
        results.get(0).fieldNames().forEachRemaining(keys::add);
        assertTrue(keys.containsAll(List.of("policy", "makespan_s", "group_latency_s", "trajectory_latency_s",
                "prefix_hit_rate", "recomputed_tokens", "imbalance", "preemptions", "turns", "errors")), keys::toString);
        assertEquals(Set.of("p50", "p90", "max"), fieldNames(results.get(0).get("group_latency_s")));
        assertEquals(Set.of("p50", "p90"), fieldNames(results.get(0).get("trajectory_latency_s")));
        assertEquals(Set.of("p50", "p90"), fieldNames(results.get(0).get("turn_latency_s")));
        assertEquals("round_robin", results.get(3).get("policy").asText());
        assertEquals("high", results.get(3).get("pressure").asText());
    }

    private static Set<String> fieldNames(JsonNode node) {
        Set<String> names = new TreeSet<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }

    @Test
    void withoutJsonItPrintsATable() {
        Outcome o = simulate(small("--policies", "cache_aware"));
        assertEquals(0, o.status(), o.err());
        assertTrue(o.out().lines().anyMatch(l -> l.startsWith("moderate  cache_aware")), o.out());
    }

    @Test
    void progressIsOneLineRewrittenAfterEachRun() {
        Outcome o = simulate(small("--policies", "round_robin,random", "--progress"));
        assertEquals(0, o.status(), o.err());
        assertTrue(o.err().startsWith("\rsimulate: 1/2 runs done (last: round_robin at moderate pressure)"), o.err());
        assertTrue(o.err().contains("\rsimulate: 2/2 runs done (last: random at moderate pressure)"), o.err());
        assertEquals(o.err().length() - 1, o.err().indexOf('\n'), "one terminal line, ended once");
        assertEquals("", simulate(small("--policies", "round_robin")).err());
    }

    @Test
    void aWrittenTraceReplaysToTheSameResults(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("batch.jsonl");
        Outcome generated = simulate(small("--abandon", "0.25", "--write-trace", trace.toString(), "--json"));
        Outcome replayed = simulate("--workers", "4", "--trace", trace.toString(), "--json");
        assertEquals(0, replayed.status(), replayed.err());
        assertEquals(JSON.readTree(generated.out()).get("results"), JSON.readTree(replayed.out()).get("results"));
    }

    @Test
    void theTrajectoryDumpHasALinePerTrajectoryAndRunWhoseTurnsAndTokensAddUp(@TempDir Path dir) throws Exception {
        Path dump = dir.resolve("trajectories.jsonl");
        Outcome o = simulate(small("--policies", "round_robin,sticky_least_loaded", "--pressure", "high", "--json",
                "--trajectories", dump.toString()));
        assertEquals(0, o.status(), o.err());
        JsonNode results = JSON.readTree(o.out()).get("results");
        List<JsonNode> lines = Files.readAllLines(dump).stream().map(SimulateMainTest::parse).toList();
        assertEquals(2 * 16, lines.size());
        assertEquals(Set.of("policy", "pressure", "session_id", "group", "workers", "turns", "prompt_tokens",
                "cached_tokens", "queue_wait_s", "prefill_s", "decode_s", "preemptions", "worker_changes",
                "latency_s", "errors"), fieldNames(lines.get(0)));
        for (int run = 0; run < 2; run++) {
            List<JsonNode> mine = lines.subList(16 * run, 16 * (run + 1));
            String policy = results.get(run).get("policy").asText();
            assertTrue(mine.stream().allMatch(l -> l.get("policy").asText().equals(policy)));
            assertEquals(results.get(run).get("turns").asInt(), mine.stream().mapToInt(l -> l.get("turns").asInt()).sum());
            assertEquals(results.get(run).get("preemptions").asInt(),
                    mine.stream().mapToInt(l -> l.get("preemptions").asInt()).sum());
            for (JsonNode l : mine) {
                assertTrue(l.get("session_id").asText().startsWith(l.get("group").asText() + "_"), l::toString);
                assertEquals(l.get("workers").size() - 1, l.get("worker_changes").asInt(), l::toString);
                assertTrue(l.get("cached_tokens").asLong() <= l.get("prompt_tokens").asLong(), l::toString);
                double parts = l.get("queue_wait_s").asDouble() + l.get("prefill_s").asDouble()
                        + l.get("decode_s").asDouble();
                assertTrue(parts <= l.get("latency_s").asDouble() + 1e-5, l::toString);
            }
        }
        assertTrue(lines.subList(16, 32).stream().allMatch(l -> l.get("worker_changes").asInt() == 0),
                "a sticky session stays on its worker");
        assertTrue(lines.subList(0, 16).stream().anyMatch(l -> l.get("worker_changes").asInt() > 0),
                "round robin moves a multi-turn session");
    }

    private static JsonNode parse(String line) {
        try {
            return JSON.readTree(line);
        } catch (java.io.IOException e) {
            throw new AssertionError(line, e);
        }
    }

    @Test
    void theOracleKeepsEachTrajectoryOnOneWorkerAndSpreadsTheBatch(@TempDir Path dir) throws Exception {
        Path dump = dir.resolve("oracle.jsonl");
        Outcome o = simulate(small("--policies", "oracle", "--json", "--trajectories", dump.toString()));
        assertEquals(0, o.status(), o.err());
        JsonNode r = JSON.readTree(o.out()).get("results").get(0);
        assertEquals("oracle", r.get("policy").asText());
        assertEquals(0, r.get("errors").asInt());
        List<JsonNode> lines = Files.readAllLines(dump).stream().map(SimulateMainTest::parse).toList();
        assertTrue(lines.stream().allMatch(l -> l.get("worker_changes").asInt() == 0));
        assertEquals(4, lines.stream().map(l -> l.get("workers").get(0).asInt()).distinct().count(),
                "16 trajectories over 4 workers use all of them");
    }

    @Test
    void aThousandWorkersRunEveryPolicy() throws Exception {
        Outcome o = simulate("--workers", "1000", "--groups", "8", "--samples", "4", "--json", "--policies",
                WorkloadOptions.DEFAULT_POLICIES + ",oracle");
        assertEquals(0, o.status(), o.err());
        JsonNode results = JSON.readTree(o.out()).get("results");
        assertEquals(WorkloadOptions.DEFAULT_POLICIES.split(",").length + 1, results.size());
        for (JsonNode r : results) {
            assertEquals(0, r.get("errors").asInt(), r::toString);
            assertEquals(1000, r.get("workers").asInt());
        }
    }

    @Test
    void theLongShapeIsNamedInTheWorkloadAndHoldsMoreTokensAPromptThanTheDefault() throws Exception {
        JsonNode longShape = JSON.readTree(simulate(small("--shape", "long", "--policies", "sticky_least_loaded",
                "--json")).out()).get("workload");
        JsonNode defaultShape = JSON.readTree(simulate(small("--policies", "sticky_least_loaded", "--json")).out())
                .get("workload");
        assertEquals("long", longShape.get("shape").asText());
        assertEquals(16, longShape.get("trajectories").asInt());
        assertTrue(longShape.get("working_set_tokens").asLong() > 4 * defaultShape.get("working_set_tokens").asLong(),
                longShape + " against " + defaultShape);
    }

    @Test
    void badInputIsOneLineAndAFailingStatus(@TempDir Path dir) throws Exception {
        assertBad(simulate(small("--policies", "sticky_least_loaded,fastest")),
                "simulate: unknown policy 'fastest'; expected one of ");
        assertBad(simulate("--workers", "0"), "simulate: --workers must be > 0, got 0");
        assertBad(simulate("--groups", "-2"), "simulate: --groups must be > 0, got -2");
        assertBad(simulate("--samples", "0"), "simulate: --samples must be > 0, got 0");
        assertBad(simulate("--sticky-balanced-tool-hold-secs", "-1"),
                "simulate: --sticky-balanced-tool-hold-secs must be between 0 and 3600, got -1.0");
        assertBad(simulate("--pressure", "extreme"),
                "simulate: pressure must be low, moderate, high or a ratio > 0, got 'extreme'");
        assertBad(simulate("--workers", "many"), "simulate: Invalid value for option '--workers'");
        assertBad(simulate("--bogus"), "simulate: Unknown option: '--bogus'");
        Path trace = dir.resolve("bad.jsonl");
        Files.writeString(trace, "{\"session_id\":\"a_0\",\"turn\":0,\"delay_s\":0,\"system_tokens\":1,"
                + "\"task_tokens\":1,\"prompt_tokens\":2,\"output_tokens\":1,\"abandoned\":false}\n{oops\n");
        assertBad(simulate("--trace", trace.toString()), "simulate: " + trace + ": trace line 2: not JSON");
        assertBad(simulate("--trace", trace.toString(), "--groups", "2", "--seed", "3"),
                "simulate: --trace gives the workload; drop --groups, --seed");
        assertBad(simulate("--abandon", "1.5"), "simulate: abandon share must be between 0 and 1, got 1.5");
        assertBad(simulate("--trace", dir.resolve("missing.jsonl").toString()), "simulate: cannot read trace ");
        assertBad(simulate("--shape", "huge"), "simulate: --shape must be default, small or long, got 'huge'");
        assertBad(simulate("--trace", trace.toString(), "--shape", "small"),
                "simulate: --trace gives the workload; drop --shape");
    }

    @Test
    void badCostFiguresAreOneLineAndAFailingStatus() {
        assertBad(simulate(small("--block-tokens", "0")), "simulate: --block-tokens must be between 1 and 65536, got 0");
        assertBad(simulate(small("--prefill-tokens-per-sec", "0")),
                "simulate: --prefill-tokens-per-sec must be > 0, got 0.0");
        assertBad(simulate(small("--prefill-tokens-per-sec", "NaN")),
                "simulate: --prefill-tokens-per-sec must be > 0, got NaN");
        assertBad(simulate(small("--decode-secs-per-token", "-0.01")),
                "simulate: --decode-secs-per-token must be > 0 and at most 60, got -0.01");
        assertBad(simulate(small("--decode-secs-per-token", "fast")),
                "simulate: Invalid value for option '--decode-secs-per-token'");
        assertBad(simulate(small("--block-tokens", "128", "--kv-tokens-per-worker", "100")),
                "simulate: --kv-tokens-per-worker must hold between one block (128 tokens) and 2^31 blocks, got 100");
        assertBad(simulate(small("--max-batched-tokens", "0")),
                "simulate: --max-batched-tokens must be between 1 and 16777216, got 0");
        assertBad(simulate(small("--max-running", "100000")),
                "simulate: --max-running must be between 1 and 65536, got 100000");
        assertBad(simulate(small("--kv-tokens-per-worker", "4096", "--pressure", "high")),
                "simulate: --kv-tokens-per-worker gives the KV capacity; drop --pressure");
    }

    @Test
    void calibratedCostsSetTheBlocksTheCapacityAndTheSpeed() throws Exception {
        String[] workload = {"--workers", "2", "--groups", "4", "--samples", "4", "--shape", "small", "--policies",
            "sticky_least_loaded", "--json"};
        JsonNode fixed = JSON.readTree(simulate(concat(workload, "--block-tokens", "128",
                "--kv-tokens-per-worker", "20480", "--prefill-tokens-per-sec", "10000",
                "--decode-secs-per-token", "0.003", "--max-batched-tokens", "2048", "--max-running", "128"))
                .out()).get("results").get(0);
        assertEquals(160, fixed.get("kv_blocks_per_worker").asInt());
        assertEquals("kv=20480", fixed.get("pressure").asText());
        JsonNode slower = JSON.readTree(simulate(concat(workload, "--block-tokens", "128",
                "--kv-tokens-per-worker", "20480", "--prefill-tokens-per-sec", "1000",
                "--decode-secs-per-token", "0.03")).out()).get("results").get(0);
        assertTrue(slower.get("turn_latency_s").get("p50").asDouble() > fixed.get("turn_latency_s").get("p50").asDouble(),
                slower + " against " + fixed);
        assertTrue(slower.get("turn_latency_s").get("p90").asDouble()
                >= slower.get("turn_latency_s").get("p50").asDouble(), slower::toString);
    }

    private static String[] concat(String[] first, String... more) {
        String[] all = new String[first.length + more.length];
        System.arraycopy(first, 0, all, 0, first.length);
        System.arraycopy(more, 0, all, first.length, more.length);
        return all;
    }

    private static void assertBad(Outcome o, String start) {
        assertEquals(2, o.status());
        assertEquals("", o.out());
        assertEquals(1, o.err().lines().count(), o.err());
        assertTrue(o.err().startsWith(start), o.err());
    }
}
