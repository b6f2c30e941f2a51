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
 * Session-id + model extraction from an OpenAI-style chat body of the given size. The id sits in the
 * body after the messages (worst case for the scan: everything before it must be skipped); with
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

    byte[] body;
    HeaderLookup headers;

    @Setup(Level.Trial)
    public void setUp() {
        StringBuilder sb = new StringBuilder(bodyBytes + 256);
        sb.append("{\"model\":\"Qwen/Qwen3-8B\",\"messages\":[");
        int turn = 0;
        String tail = "],\"temperature\":0.7,\"max_tokens\":512,\"stream\":true,\"user\":\"trajectory-42-7f3a\"}";
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
        body = sb.toString().getBytes(StandardCharsets.UTF_8);
        headers = header ? name -> name.equals("x-session-id") ? "trajectory-42-7f3a" : null : HeaderLookup.NONE;
        Extraction e = extract();
        if (!"trajectory-42-7f3a".equals(e.sessionId()) || !"Qwen/Qwen3-8B".equals(e.model())) {
            throw new IllegalStateException("benchmark body does not extract as expected: " + e);
        }
    }

    @Benchmark
    public Extraction extract() {
        return SessionIdExtractor.UPSTREAM.extract(headers, BodySource.of(body, 0, body.length));
    }
}
