package org.vllmrouter.bench;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.vllmrouter.core.session.BodySource;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.HeaderLookup;
import org.vllmrouter.core.session.SessionIdExtractor;

/**
 * Session-id + model extraction from a body of the given size and shape: an OpenAI-style chat body (messages with
 * escaped quotes), a completion body (one long prompt string) or a SkyRL generate body (prompt token ids). The id
 * sits in the body after the payload (worst case for the scan: everything before it must be skipped); with
 * {@code header = true} it comes from X-Session-ID and the scan stops at {@code model}.
 */
@BenchmarkMode({Mode.AverageTime, Mode.Throughput})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class SessionIdExtractionBenchmark {
    @Param({"2048", "65536"})
    public int bodyBytes;

    @Param({"false", "true"})
    public boolean header;

    @Param({"chat", "completion", "generate"})
    public String shape;

    byte[] body;
    HeaderLookup headers;

    @Setup(Level.Trial)
    public void setUp() {
        String tail = "],\"temperature\":0.7,\"max_tokens\":512,\"stream\":true,\"user\":\"trajectory-42-7f3a\"}";
        StringBuilder sb = new StringBuilder(bodyBytes + 256);
        switch (shape) {
            case "chat" -> chatBody(sb, tail);
            case "completion" -> sb.append("{\"model\":\"Qwen/Qwen3-8B\",\"prompt\":[\"")
                    .append("The agent reads the tool output and reasons about it. "
                            .repeat(Math.max(1, (bodyBytes - 200) / 54)))
                    .append('"');
            case "generate" -> {
                sb.append("{\"model\":\"Qwen/Qwen3-8B\",\"sampling_params\":{\"temperature\":1.0},\"token_ids\":[");
                for (int t = 0; sb.length() + tail.length() < bodyBytes; t++) {
                    sb.append(t == 0 ? "" : ",").append(1000 + (t * 7919) % 150000);
                }
            }
            default -> throw new IllegalArgumentException("shape " + shape);
        }
        if (!shape.equals("chat")) {
            sb.append(tail);
        }
        body = sb.toString().getBytes(StandardCharsets.UTF_8);
        headers = header ? name -> name.equals("x-session-id") ? "trajectory-42-7f3a" : null : HeaderLookup.NONE;
        Extraction e = extract();
        if (!"trajectory-42-7f3a".equals(e.sessionId()) || !"Qwen/Qwen3-8B".equals(e.model())) {
            throw new IllegalStateException("benchmark body does not extract as expected: " + e);
        }
    }

    private void chatBody(StringBuilder sb, String tail) {
        sb.append("{\"model\":\"Qwen/Qwen3-8B\",\"messages\":[");
        int turn = 0;
        while (sb.length() + tail.length() < bodyBytes) {
            String role = turn++ % 2 == 0 ? "user" : "assistant";
            int room = bodyBytes - sb.length() - tail.length() - 40;
            String content = ("Step " + turn + ": the agent reads the tool output and \\\"reasons\\\" about it. ")
                    .repeat(8);
            content = content.substring(0, Math.max(1, Math.min(content.length(), room)));
            if (content.endsWith("\\")) {
                content = content.substring(0, content.length() - 1) + ".";
            }
            sb.append(turn > 1 ? "," : "").append("{\"role\":\"").append(role).append("\",\"content\":\"")
                    .append(content).append("\"}");
        }
        sb.append(tail);
    }

    @Benchmark
    public Extraction extract() {
        return SessionIdExtractor.UPSTREAM.extract(headers, BodySource.of(body, 0, body.length));
    }
}
