package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.vllmrouter.host.PythonCommandLine.Kind;

/** {@code vllm-router python}'s arguments, read as {@code python} reads its own. */
class PythonCommandLineTest {

    private static PythonCommandLine parse(String... args) throws Exception {
        return PythonCommandLine.parse(List.of(args));
    }

    @Test
    void aScriptEndsTheOptionsAndItsArgumentsAreSysArgv() throws Exception {
        PythonCommandLine script = parse("--python-path", "/a", "--python-path=/b", "train.py", "--lr", "-c", "x");
        assertEquals(new PythonCommandLine(List.of("/a", "/b"), Kind.FILE, "train.py",
                List.of("train.py", "--lr", "-c", "x")), script);
    }

    @Test
    void codeModuleAndStdinPutTheirFlagInArgvZero() throws Exception {
        assertEquals(new PythonCommandLine(List.of(), Kind.COMMAND, "print(1)", List.of("-c", "a", "--python-path", "b")),
                parse("-c", "print(1)", "a", "--python-path", "b"));
        assertEquals(new PythonCommandLine(List.of(), Kind.MODULE, "pkg.mod", List.of("-m", "--help")),
                parse("-m", "pkg.mod", "--help"));
        assertEquals(new PythonCommandLine(List.of("/p"), Kind.STDIN, "-", List.of("-", "x")),
                parse("--python-path", "/p", "-", "x"));
    }

    @Test
    void badCommandLinesAreUsageErrorsWithPythonsWording() {
        assertEquals("Argument expected for the -c option",
                assertThrows(PythonCommandLine.UsageError.class, () -> parse("-c")).getMessage());
        assertEquals("Argument expected for the -m option",
                assertThrows(PythonCommandLine.UsageError.class, () -> parse("--python-path", "/a", "-m")).getMessage());
        assertEquals("unknown option -X",
                assertThrows(PythonCommandLine.UsageError.class, () -> parse("-X", "dev", "s.py")).getMessage());
        assertEquals("--python-path needs a directory",
                assertThrows(PythonCommandLine.UsageError.class, () -> parse("--python-path")).getMessage());
        assertEquals("no program: give a SCRIPT, -c CODE, -m MODULE or -",
                assertThrows(PythonCommandLine.UsageError.class, () -> parse("--python-path", "/a")).getMessage());
    }

    @Test
    void helpBeforeTheProgramIsOursAfterItIsTheProgramsArgument() throws Exception {
        assertThrows(PythonCommandLine.HelpRequested.class, () -> parse("-h"));
        assertThrows(PythonCommandLine.HelpRequested.class, () -> parse("--python-path", "/a", "--help"));
        assertEquals(List.of("s.py", "--help"), parse("s.py", "--help").argv());
    }
}
