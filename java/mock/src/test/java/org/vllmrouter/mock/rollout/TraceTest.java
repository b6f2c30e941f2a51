package org.vllmrouter.mock.rollout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

class TraceTest {
    private static final String TURN0 = "{\"session_id\":\"t1_0\",\"turn\":0,\"delay_s\":0.0,\"system_tokens\":10,"
            + "\"task_tokens\":5,\"prompt_tokens\":15,\"output_tokens\":3,\"abandoned\":false}";

    @Test
    void aWrittenTraceReadsBackAsTheSameWorkload() throws Exception {
        Workload w = Workload.generate(WorkloadShape.of(6, 3).withAbandonShare(0.3), 11);
        StringWriter out = new StringWriter();
        Trace.write(w, out);
        assertEquals(w.turnCount(), out.toString().split("\n").length);
        assertEquals(w, Trace.read(new StringReader(out.toString())));
    }

    @Test
    void sessionsMayInterleaveAndBlankLinesAreSkipped() throws Exception {
        String trace = TURN0 + "\n\n" + TURN0.replace("t1_0", "t1_1") + "\n"
                + line("t1_0", 1, 25, false) + "\n";
        Workload w = Trace.read(new StringReader(trace));
        assertEquals(2, w.trajectories().size());
        assertEquals(2, w.trajectories().get(0).turns().size());
        assertEquals(1, w.groups().size());
    }

    @Test
    void aBadLineIsNamedByItsNumber() {
        assertBad(TURN0 + "\n{not json", "trace line 2: not JSON");
        assertBad(TURN0 + "\n" + TURN0.replace(",\"abandoned\":false", ""), "trace line 2: missing abandoned");
        assertBad(TURN0.replace("\"turn\":0", "\"turn\":-1"), "trace line 1: turn must be a whole number >= 0, got -1");
        assertBad(TURN0.replace("\"output_tokens\":3", "\"output_tokens\":0"),
                "trace line 1: output_tokens must be a whole number >= 1, got 0");
        assertBad(TURN0.replace("\"prompt_tokens\":15", "\"prompt_tokens\":\"15\""),
                "trace line 1: prompt_tokens must be a whole number >= 1, got \"15\"");
        assertBad(TURN0.replace("}", ",\"extra\":1}"), "trace line 1: unknown field 'extra'");
        assertBad("[1,2]", "trace line 1: expected a JSON object");
    }

    @Test
    void turnsMustFollowEachOtherAndTheContextMustGrow() {
        assertBad(TURN0 + "\n" + line("t1_0", 2, 25, false), "trace line 2: session 't1_0' turn 2 where turn 1");
        assertBad(TURN0 + "\n" + line("t1_0", 1, 17, false),
                "trace line 2: prompt_tokens 17 is shorter than the previous turn's prompt and output (18)");
        assertBad(TURN0.replace("\"prompt_tokens\":15", "\"prompt_tokens\":16"),
                "trace line 1: turn 0's prompt_tokens 16 is not system_tokens + task_tokens (15)");
        assertBad(TURN0.replace("false", "true") + "\n" + line("t1_0", 1, 25, false),
                "trace line 2: session 't1_0' has a turn after its abandoned turn");
        assertBad(TURN0 + "\n" + TURN0.replace("t1_0", "t1_1").replace("\"task_tokens\":5", "\"task_tokens\":6")
                        .replace("\"prompt_tokens\":15", "\"prompt_tokens\":16"),
                "trace line 2: task_tokens 6 differs from group 't1' (5 tokens)");
        assertBad("\n\n", "trace line 2: the trace has no turns");
    }

    private static String line(String session, int turn, int prompt, boolean abandoned) {
        return "{\"session_id\":\"" + session + "\",\"turn\":" + turn + ",\"delay_s\":0.5,\"system_tokens\":10,"
                + "\"task_tokens\":5,\"prompt_tokens\":" + prompt + ",\"output_tokens\":4,\"abandoned\":" + abandoned
                + "}";
    }

    private static void assertBad(String trace, String messageStart) {
        TraceFormatException e = assertThrows(TraceFormatException.class, () -> read(trace));
        if (!e.getMessage().startsWith(messageStart)) {
            throw new AssertionError("expected '" + messageStart + "...', got '" + e.getMessage() + "'");
        }
    }

    private static Workload read(String trace) throws IOException, TraceFormatException {
        return Trace.read(new StringReader(trace));
    }
}
