package org.vllmrouter.server.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * {@link UsageScanner} over one relayed answer of 16 MiB, in the 64 KiB parts a worker connection reads: how many
 * answers a second one event loop can look through for their usage (multiply by 16 for MiB/s). In the package of
 * the scanner, which is not public.
 *
 * <ul>
 *   <li>{@code probe}: load_compare.sh's large SSE answer (a short completion event, repeated), no usage;
 *   <li>{@code chat}: vLLM chat-completion chunks with {@code "logprobs":null} and some text, the final chunk
 *       carrying usage, as a stream asked for {@code include_usage} ends;
 *   <li>{@code plain}: one non-streamed answer with a long text and its usage at the end.
 * </ul>
 *
 * <p>Run: {@code java -jar java/bench/target/router-bench.jar UsageScan -f 1 -wi 3 -w 1s -i 5 -r 1s}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Thread)
public class UsageScanBenchmark {
    private static final int ANSWER_BYTES = 16 << 20;
    private static final int PART_BYTES = 64 << 10;
    private static final String USAGE = "\"usage\":{\"prompt_tokens\":4096,\"completion_tokens\":900,"
            + "\"total_tokens\":4996,\"prompt_tokens_details\":{\"cached_tokens\":3072}}";

    @Param({"probe", "chat", "plain"})
    public String shape;

    private ByteBuf[] parts;

    @Setup
    public void build() {
        String answer = switch (shape) {
            case "probe" -> repeat("data: {\"id\":\"cmpl-bench\",\"object\":\"text_completion\","
                    + "\"choices\":[{\"index\":0,\"text\":\" token\"}]}\n\n", "data: [DONE]\n\n");
            case "chat" -> repeat("data: {\"id\":\"chatcmpl-7f3a\",\"object\":\"chat.completion.chunk\","
                    + "\"created\":1733400000,\"model\":\"Qwen/Qwen2.5-7B-Instruct\",\"choices\":[{\"index\":0,"
                    + "\"delta\":{\"content\":\" the agent ran grep\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
                    "data: {\"id\":\"chatcmpl-7f3a\",\"object\":\"chat.completion.chunk\",\"choices\":[]," + USAGE
                            + "}\n\ndata: [DONE]\n\n");
            case "plain" -> "{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\""
                    + repeat("Thinking about the grep output, ", "") + "\",\"finish_reason\":\"length\"}]," + USAGE
                    + "}";
            default -> throw new IllegalArgumentException(shape);
        };
        byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
        parts = new ByteBuf[(bytes.length + PART_BYTES - 1) / PART_BYTES];
        for (int i = 0; i < parts.length; i++) {
            int from = i * PART_BYTES;
            int length = Math.min(PART_BYTES, bytes.length - from);
            parts[i] = Unpooled.directBuffer(length).writeBytes(bytes, from, length);
        }
    }

    private static String repeat(String event, String last) {
        StringBuilder sb = new StringBuilder(ANSWER_BYTES + 256);
        while (sb.length() + event.length() <= ANSWER_BYTES) {
            sb.append(event);
        }
        return sb.append(last).toString();
    }

    @TearDown
    public void free() {
        for (ByteBuf part : parts) {
            part.release();
        }
    }

    @Benchmark
    public long scan() {
        UsageScanner scanner = new UsageScanner();
        for (ByteBuf part : parts) {
            scanner.scan(part);
        }
        return scanner.cachedTokens();
    }
}
