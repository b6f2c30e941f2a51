package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.graalvm.polyglot.Value;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Parity of the router's flag surface between GraalPy (inside this JVM, as {@code launch} runs it)
 * and CPython, over the shared corpus {@code py_test/parity/argv_corpus.json}.
 *
 * <p>GraalPy's outcomes go to {@code target/parity/graalpy-results.json}, which the pytest side
 * compares with its own CPython run. This test also runs the same driver on {@code python3} when
 * the machine has one, so {@code mvn verify} alone catches a difference.
 */
class GraalPyParityTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static Path corpusPath;
    private static JsonNode corpus;
    private static String driverSource;
    private static GraalPyRouterArgs graalPy;
    private static JsonNode graalPyResults;

    @BeforeAll
    static void runCorpusOnGraalPy() throws IOException {
        corpusPath = Path.of(System.getProperty("vllmrouter.corpus"));
        String corpusText = Files.readString(corpusPath);
        corpus = JSON.readTree(corpusText);
        try (InputStream in = GraalPyParityTest.class.getResourceAsStream("/parity/parity_driver.py")) {
            driverSource = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        // One context for the whole corpus, as the launcher would use for one argv.
        graalPy = GraalPyRouterArgs.open();
        Value loadModule = graalPy.context().eval("python", """
                def load_module(name, source):
                    import types
                    module = types.ModuleType(name)
                    exec(compile(source, name + ".py", "exec"), module.__dict__)
                    return module
                load_module
                """);
        Value driver = loadModule.execute("parity_driver", driverSource);
        String report = driver.getMember("run_corpus").execute(corpusText).asString();

        Path out = Path.of(System.getProperty("vllmrouter.parityDir"), "graalpy-results.json");
        Files.createDirectories(out.getParent());
        Files.writeString(out, report);
        graalPyResults = JSON.readTree(report).get("results");
    }

    @AfterAll
    static void closeContext() {
        if (graalPy != null) {
            graalPy.close();
        }
    }

    @Test
    void corpusCoversTheRequiredGroups() {
        JsonNode entries = corpus.get("entries");
        assertTrue(entries.size() >= 60, "at least 60 argv vectors, found " + entries.size());
        int prefixed = 0;
        int usageErrors = 0;
        int valueErrors = 0;
        for (JsonNode entry : entries) {
            prefixed += entry.path("prefix").asBoolean() ? 1 : 0;
            usageErrors += entry.get("expect").asText().equals("usage_error") ? 1 : 0;
            valueErrors += entry.get("expect").asText().equals("value_error") ? 1 : 0;
        }
        assertTrue(prefixed >= 5, "prefixed entries: " + prefixed);
        assertTrue(usageErrors >= 10, "usage errors: " + usageErrors);
        assertTrue(valueErrors >= 3, "value errors: " + valueErrors);
    }

    @Test
    void everyEntryEndsAsItsExpectSays() {
        List<String> wrong = new ArrayList<>();
        for (JsonNode entry : corpus.get("entries")) {
            String id = entry.get("id").asText();
            JsonNode outcome = graalPyResults.get(id);
            String actual = switch (outcome.get("exit_code").asInt()) {
                case 0 -> outcome.get("config").isNull() ? "help" : "ok";
                case 2 -> "usage_error";
                default -> outcome.path("error").path("kind").asText().equals("ValueError") ? "value_error" : "other";
            };
            if (!actual.equals(entry.get("expect").asText())) {
                wrong.add(id + ": expected " + entry.get("expect").asText() + ", got " + outcome);
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void argparseMessagesComeThroughGraalPy() {
        JsonNode badChoice = graalPyResults.get("bad-policy-choice");
        assertEquals(2, badChoice.get("exit_code").asInt());
        assertTrue(badChoice.at("/error/message").asText()
                .startsWith("vllm-router: error: argument --policy: invalid choice: 'least_loaded'"), badChoice.toString());
        assertTrue(badChoice.get("stderr").asText().startsWith("usage: vllm-router"), badChoice.toString());
        assertEquals("Invalid bootstrap port: abc. Must be a number or 'none'",
                graalPyResults.at("/bad-bootstrap-port/error/message").asText());
        assertTrue(graalPyResults.at("/help/stdout").asText().contains("--policy"));
    }

    @Test
    void cpythonAgreesOnEveryEntry() throws Exception {
        Path python3 = findOnPath("python3");
        if (python3 == null) {
            // The pytest side compares graalpy-results.json with CPython on machines without python3 here.
            System.err.println("GraalPyParityTest: python3 not on PATH; CPython comparison left to pytest");
            return;
        }
        Path driver = Files.createTempFile("parity_driver", ".py");
        Path cpythonOut = Path.of(System.getProperty("vllmrouter.parityDir"), "cpython-results.json");
        try {
            Files.writeString(driver, driverSource);
            ProcessBuilder pb = new ProcessBuilder(python3.toString(), driver.toString(), corpusPath.toString(),
                    cpythonOut.toString()).redirectErrorStream(true);
            pb.environment().put("PYTHONPATH", Path.of(System.getProperty("vllmrouter.pythonSources")).toString());
            Process process = pb.start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(process.waitFor(120, TimeUnit.SECONDS), "python3 corpus run timed out");
            assertEquals(0, process.exitValue(), "python3 driver failed:\n" + output);
        } finally {
            Files.deleteIfExists(driver);
        }
        JsonNode cpythonResults = JSON.readTree(cpythonOut.toFile()).get("results");

        List<String> differences = new ArrayList<>();
        for (JsonNode entry : corpus.get("entries")) {
            String id = entry.get("id").asText();
            for (Iterator<Map.Entry<String, JsonNode>> fields = cpythonResults.get(id).fields(); fields.hasNext(); ) {
                Map.Entry<String, JsonNode> field = fields.next();
                JsonNode graalValue = graalPyResults.get(id).get(field.getKey());
                if (!field.getValue().equals(graalValue)) {
                    differences.add(id + "." + field.getKey() + ":\n" + describeDifference(field.getValue(), graalValue));
                }
            }
        }
        if (!differences.isEmpty()) {
            fail(differences.size() + " differences between CPython and GraalPy:\n" + String.join("\n", differences));
        }
    }

    /** The two values, or for long texts (usage, help) only their first differing line. */
    private static String describeDifference(JsonNode cpython, JsonNode graalPy) {
        if (cpython.isTextual() && graalPy != null && graalPy.isTextual()) {
            String[] cpythonLines = cpython.asText().split("\n", -1);
            String[] graalPyLines = graalPy.asText().split("\n", -1);
            for (int i = 0; i < Math.max(cpythonLines.length, graalPyLines.length); i++) {
                String c = i < cpythonLines.length ? cpythonLines[i] : "(no line)";
                String g = i < graalPyLines.length ? graalPyLines[i] : "(no line)";
                if (!c.equals(g)) {
                    return "  line " + (i + 1) + " cpython: " + c + "\n  line " + (i + 1) + " graalpy: " + g;
                }
            }
        }
        return "  cpython: " + cpython + "\n  graalpy: " + graalPy;
    }

    private static Path findOnPath(String command) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            Path candidate = Path.of(dir, command);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }
}
