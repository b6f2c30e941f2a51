package org.vllmrouter.mock.rollout;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A workload as JSONL, one line per turn, so a generated batch can be replayed and a real trainer's trace can be
 * replayed too:
 *
 * <pre>{"session_id":"task00007_3","turn":0,"delay_s":0.0,"system_tokens":1000,"task_tokens":512,
 *  "prompt_tokens":1512,"output_tokens":230,"abandoned":false}</pre>
 *
 * A session's lines come in turn order (sessions may interleave); turn 0's prompt is the system and task prompts, a
 * later turn's prompt holds the previous prompt and its output; an abandoned turn is its session's last. The whole
 * trace is read and checked before anything is sent: the first bad line stops the read with its number.
 */
public final class Trace {
    static final List<String> FIELDS = List.of("session_id", "turn", "delay_s", "system_tokens", "task_tokens",
            "prompt_tokens", "output_tokens", "abandoned");
    private static final Set<String> FIELD_SET = Set.copyOf(FIELDS);
    private static final ObjectMapper JSON = new ObjectMapper();

    private Trace() {
    }

    /** Writes every turn of {@code workload}, trajectory by trajectory. */
    public static void write(Workload workload, Writer out) throws IOException {
        for (Trajectory t : workload.trajectories()) {
            for (int k = 0; k < t.turns().size(); k++) {
                Turn turn = t.turns().get(k);
                ObjectNode line = JSON.createObjectNode()
                        .put("session_id", t.sessionId())
                        .put("turn", k)
                        .put("delay_s", turn.delaySeconds())
                        .put("system_tokens", t.systemTokens())
                        .put("task_tokens", t.taskTokens())
                        .put("prompt_tokens", turn.promptTokens())
                        .put("output_tokens", turn.outputTokens())
                        .put("abandoned", turn.abandoned());
                out.write(JSON.writeValueAsString(line));
                out.write('\n');
            }
        }
        out.flush();
    }

    /** Reads a trace; blank lines are skipped. */
    public static Workload read(Reader in) throws IOException, TraceFormatException {
        Map<String, Building> sessions = new LinkedHashMap<>();
        Map<String, Integer> taskByGroup = new HashMap<>();
        BufferedReader lines = new BufferedReader(in);
        int lineNo = 0;
        Integer system = null;
        for (String raw = lines.readLine(); raw != null; raw = lines.readLine()) {
            lineNo++;
            if (raw.isBlank()) {
                continue;
            }
            Line line = parse(raw, lineNo);
            if (system == null) {
                system = line.systemTokens;
            } else if (line.systemTokens != system) {
                throw new TraceFormatException(lineNo, "system_tokens " + line.systemTokens
                        + " differs from the trace's system prompt (" + system + " tokens)");
            }
            Integer task = taskByGroup.putIfAbsent(Trajectory.groupOf(line.sessionId), line.taskTokens);
            if (task != null && task != line.taskTokens) {
                throw new TraceFormatException(lineNo, "task_tokens " + line.taskTokens + " differs from group '"
                        + Trajectory.groupOf(line.sessionId) + "' (" + task + " tokens)");
            }
            Building session = sessions.computeIfAbsent(line.sessionId, id -> new Building());
            session.add(line, lineNo);
        }
        if (sessions.isEmpty()) {
            throw new TraceFormatException(Math.max(1, lineNo), "the trace has no turns");
        }
        List<Trajectory> trajectories = new ArrayList<>(sessions.size());
        sessions.forEach((id, b) -> trajectories.add(new Trajectory(id, b.systemTokens, b.taskTokens, b.turns)));
        return new Workload(trajectories);
    }

    private record Line(String sessionId, int turn, double delaySeconds, int systemTokens, int taskTokens,
                        int promptTokens, int outputTokens, boolean abandoned) {
    }

    private static final class Building {
        int systemTokens;
        int taskTokens;
        final List<Turn> turns = new ArrayList<>();

        void add(Line line, int lineNo) throws TraceFormatException {
            if (line.turn != turns.size()) {
                throw new TraceFormatException(lineNo, "session '" + line.sessionId + "' turn " + line.turn
                        + " where turn " + turns.size() + " was expected");
            }
            if (turns.isEmpty()) {
                systemTokens = line.systemTokens;
                taskTokens = line.taskTokens;
                if (line.promptTokens != line.systemTokens + line.taskTokens) {
                    throw new TraceFormatException(lineNo, "turn 0's prompt_tokens " + line.promptTokens
                            + " is not system_tokens + task_tokens (" + (line.systemTokens + line.taskTokens) + ")");
                }
            } else {
                Turn previous = turns.get(turns.size() - 1);
                if (previous.abandoned()) {
                    throw new TraceFormatException(lineNo, "session '" + line.sessionId
                            + "' has a turn after its abandoned turn");
                }
                int least = previous.promptTokens() + previous.outputTokens();
                if (line.promptTokens < least) {
                    throw new TraceFormatException(lineNo, "prompt_tokens " + line.promptTokens
                            + " is shorter than the previous turn's prompt and output (" + least + ")");
                }
            }
            turns.add(new Turn(line.delaySeconds, line.promptTokens, line.outputTokens, line.abandoned));
        }
    }

    private static Line parse(String raw, int lineNo) throws TraceFormatException {
        JsonNode node;
        try {
            node = JSON.readTree(raw);
        } catch (JsonProcessingException e) {
            throw new TraceFormatException(lineNo, "not JSON (" + e.getOriginalMessage() + ")");
        }
        if (node == null || !node.isObject()) {
            throw new TraceFormatException(lineNo, "expected a JSON object");
        }
        for (var names = node.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!FIELD_SET.contains(name)) {
                throw new TraceFormatException(lineNo, "unknown field '" + name + "'");
            }
        }
        JsonNode id = required(node, "session_id", lineNo);
        if (!id.isTextual() || id.asText().isEmpty()) {
            throw new TraceFormatException(lineNo, "session_id must be a non-empty string");
        }
        JsonNode abandoned = required(node, "abandoned", lineNo);
        if (!abandoned.isBoolean()) {
            throw new TraceFormatException(lineNo, "abandoned must be true or false");
        }
        JsonNode delay = required(node, "delay_s", lineNo);
        if (!delay.isNumber() || !(delay.asDouble() >= 0) || Double.isInfinite(delay.asDouble())) {
            throw new TraceFormatException(lineNo, "delay_s must be a number >= 0");
        }
        return new Line(id.asText(), count(node, "turn", 0, lineNo), delay.asDouble(),
                count(node, "system_tokens", 0, lineNo), count(node, "task_tokens", 0, lineNo),
                count(node, "prompt_tokens", 1, lineNo), count(node, "output_tokens", 1, lineNo),
                abandoned.asBoolean());
    }

    private static JsonNode required(JsonNode node, String field, int lineNo) throws TraceFormatException {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            throw new TraceFormatException(lineNo, "missing " + field);
        }
        return value;
    }

    private static int count(JsonNode node, String field, int least, int lineNo) throws TraceFormatException {
        JsonNode value = required(node, field, lineNo);
        if (!value.canConvertToInt() || !value.isIntegralNumber() || value.asInt() < least) {
            throw new TraceFormatException(lineNo, field + " must be a whole number >= " + least + ", got " + value);
        }
        return value.asInt();
    }
}
