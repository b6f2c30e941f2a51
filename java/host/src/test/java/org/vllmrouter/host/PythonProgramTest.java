package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * {@code vllm-router python}'s program runner in this JVM (one GraalPy engine for every case, a
 * context each): what the program sees ({@code sys.argv}, {@code sys.path}, the standard streams)
 * and how it ends. The launcher script, signals and the engine are covered by {@code PythonCommandIT}.
 */
class PythonProgramTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Prints what `python` decides before the program runs, as one JSON line. */
    private static final String REPORT = """
            import json, sys
            print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "path1": sys.path[1], "name": __name__,
                              "file": globals().get("__file__"), "implementation": sys.implementation.name}))
            """;

    @TempDir
    static Path dir;

    record Run(int status, String stdout, String stderr) {
        List<String> stderrLines() {
            return stderr.lines().toList();
        }
    }

    private static Run run(String stdin, String... args) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = PythonProgram.run(PythonCommandLine.parse(List.of(args)),
                new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)), out, err);
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static Path write(String name, String source) throws Exception {
        return Files.writeString(dir.resolve(name), source);
    }

    @Test
    void aScriptSeesItsArgvItsDirectoryFirstOnSysPathAndTheSameStreams() throws Exception {
        Path script = write("report.py", REPORT + "print(sys.stdin.read().upper(), end='')\n");
        Run run = run("trajectory data\n", "--python-path", "/opt/extra", script.toString(), "--lr", "0.1");
        assertEquals(0, run.status(), run.stderr());
        List<String> lines = run.stdout().lines().toList();
        JsonNode seen = JSON.readTree(lines.get(0));
        assertEquals(List.of(script.toString(), "--lr", "0.1"), JSON.convertValue(seen.get("argv"), List.class));
        assertEquals(dir.toString(), seen.get("path0").asText());
        assertEquals(GraalPyRouterArgs.PACKAGED_SOURCES, seen.get("path1").asText());
        assertEquals("__main__", seen.get("name").asText());
        assertEquals(script.toAbsolutePath().toString(), seen.get("file").asText());
        assertEquals("graalpy", seen.get("implementation").asText());
        assertEquals("TRAJECTORY DATA", lines.get(1));
    }

    @Test
    void codeAndModulesGetPythonsArgvZeroAndPathZero() throws Exception {
        Run code = run("", "-c", REPORT, "a", "b");
        assertEquals(0, code.status(), code.stderr());
        JsonNode seen = JSON.readTree(code.stdout());
        assertEquals(List.of("-c", "a", "b"), JSON.convertValue(seen.get("argv"), List.class));
        assertEquals("", seen.get("path0").asText());

        Path module = write("report_module.py", REPORT);
        Run moduleRun = run("", "--python-path", dir.toString(), "-m", "report_module", "x");
        assertEquals(0, moduleRun.status(), moduleRun.stderr());
        seen = JSON.readTree(moduleRun.stdout());
        assertEquals(List.of(module.toString(), "x"), JSON.convertValue(seen.get("argv"), List.class));
        assertEquals(Path.of("").toAbsolutePath().toString(), seen.get("path0").asText());
        assertEquals("__main__", seen.get("name").asText());
    }

    @Test
    void theRoutersPackageIsTheOneThisJvmCarries() throws Exception {
        Run run = run("", "-c", "import vllm_router.router as r; print(r.__file__); print(r._bridge().__name__)");
        assertEquals(0, run.status(), run.stderr());
        assertEquals(List.of(GraalPyRouterArgs.PACKAGED_SOURCES + "/vllm_router/router.py", "vllm_router.bridge.graal"),
                run.stdout().lines().toList());
    }

    @Test
    void systemExitEndsWithItsStatusAndAMessageCodeIsPrinted() throws Exception {
        assertEquals(3, run("", "-c", "import sys; sys.exit(3)").status());
        assertEquals(0, run("", "-c", "raise SystemExit").status());
        Run message = run("", "-c", "import sys; sys.exit('no workers left')");
        assertEquals(1, message.status());
        assertEquals("no workers left\n", message.stderr());
    }

    @Test
    void argparseErrorsInAModuleExitTwo() throws Exception {
        write("cli_module.py", """
                import argparse
                parser = argparse.ArgumentParser(prog="cli")
                parser.add_argument("--steps", type=int)
                parser.parse_args()
                """);
        Run run = run("", "--python-path", dir.toString(), "-m", "cli_module", "--steps", "many");
        assertEquals(2, run.status(), run.stderr());
        assertEquals("cli: error: argument --steps: invalid int value: 'many'",
                run.stderrLines().get(run.stderrLines().size() - 1));
    }

    @Test
    void anUncaughtKeyboardInterruptPrintsItsTracebackAndExits130() throws Exception {
        Run run = run("", "-c", "raise KeyboardInterrupt");
        assertEquals(130, run.status());
        assertEquals("Traceback (most recent call last):", run.stderrLines().get(0));
        assertEquals("KeyboardInterrupt", run.stderrLines().get(run.stderrLines().size() - 1));
    }

    @Test
    void aMissingModuleIsRunpysMessageAndStatusOne() throws Exception {
        Run run = run("", "-m", "no_such_module_here");
        assertEquals(1, run.status());
        assertEquals("vllm-router: No module named no_such_module_here\n", run.stderr());
    }

    @Test
    void anUncaughtExceptionEndsWithItsTracebackAndStatusOne() throws Exception {
        Run run = run("", "-c", "print(open('/nonexistent/x').read())");
        assertEquals(1, run.status());
        assertEquals("Traceback (most recent call last):", run.stderrLines().get(0));
        assertTrue(run.stderr().endsWith("FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/x'\n"),
                run.stderr());
    }
}
