package org.vllmrouter.mock;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;
import org.vllmrouter.mock.rollout.EngineRequest;
import org.vllmrouter.mock.rollout.PromptContent;

/**
 * One completions or chat request served by a worker's {@link ModelEngine}. The answer is the continuation of the
 * session's context ({@link PromptContent#ownText}), so the next turn of a rollout trajectory extends exactly what
 * was generated; its usage reports the prompt tokens the model found in its prefix cache. A streamed turn gets one
 * SSE chunk per step that generated tokens for it. A client that goes away aborts the turn in the model, as vLLM
 * aborts a request whose connection closed. A prompt the whole KV cache cannot hold is refused; a {@code max_tokens}
 * that would outgrow it is cut to what fits (vLLM would stop such a request short too).
 */
final class ModelTurn {
    private static final byte[] SSE_DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);

    private final InferenceRequest req;
    private final MockWorker worker;
    private final ChannelHandlerContext ctx;
    private final boolean keepAlive;
    private final int[] tokens;
    private final String output;
    private final EngineRequest request;
    private final String id = "cmpl-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    private final int outputTokens;
    private final GenericFutureListener<Future<? super Void>> onClose;
    /** Output tokens already streamed; written by the stepping thread only. */
    private int streamed;

    private ModelTurn(InferenceRequest req, String sessionId, MockWorker worker, ChannelHandlerContext ctx,
                      boolean keepAlive) {
        if (req.prompts().size() != 1 || req.n() != 1) {
            throw new BadRequestException("the engine model serves one prompt and one choice per request");
        }
        this.req = req;
        this.worker = worker;
        this.ctx = ctx;
        this.keepAlive = keepAlive;
        int[] prompt = req.prompts().get(0);
        if (prompt.length == 0) {
            throw new BadRequestException("the prompt is empty");
        }
        ModelEngine engine = worker.engine();
        int capacity = engine.capacityTokens();
        if (prompt.length >= capacity) {
            throw new BadRequestException("the prompt (" + prompt.length + " tokens) does not fit in this worker's "
                    + "KV cache (" + capacity + " tokens)");
        }
        this.outputTokens = Math.min(req.outputTokens(), capacity - prompt.length + 1);
        String session = sessionId != null ? sessionId : id;
        this.output = PromptContent.ownText(session, prompt.length, outputTokens);
        int[] generated = MockTokenizer.encode(output);
        this.tokens = new int[prompt.length + generated.length];
        System.arraycopy(prompt, 0, tokens, 0, prompt.length);
        System.arraycopy(generated, 0, tokens, prompt.length, generated.length);
        this.request = new EngineRequest(blockHashes(tokens, engine.blockSize()), prompt.length, outputTokens,
                engine.history(sessionId), this);
        this.onClose = f -> engine.abort(this);
    }

    /** Starts serving {@code req} on {@code worker}'s model; its answer comes when the model finishes it. */
    static void serve(InferenceRequest req, String sessionId, MockWorker worker, ChannelHandlerContext ctx,
                      boolean keepAlive) {
        ModelTurn turn = new ModelTurn(req, sessionId, worker, ctx, keepAlive);
        if (turn.streams()) {
            turn.writeStreamHead();
        }
        ctx.channel().closeFuture().addListener(turn.onClose);
        worker.engine().submit(turn);
    }

    EngineRequest request() {
        return request;
    }

    int[] tokens() {
        return tokens;
    }

    boolean streams() {
        return req.stream();
    }

    /** On the stepping thread, after a step: streams the tokens generated since the last chunk. */
    void progressed() {
        int now = Math.min(request.generated(), output.length());
        if (now > streamed) {
            int from = streamed;
            streamed = now;
            ctx.executor().execute(() -> ctx.writeAndFlush(sse(chunk(output.substring(from, now), false))));
        }
    }

    /** On the stepping thread: the model generated every output token. */
    void finished() {
        int from = streamed;
        streamed = output.length();
        ctx.executor().execute(() -> {
            ctx.channel().closeFuture().removeListener(onClose);
            if (!req.stream()) {
                Replies.json(ctx, keepAlive, 200, fullAnswer());
                return;
            }
            ctx.write(sse(chunk(output.substring(from), true)));
            if (req.includeUsage()) {
                ObjectNode usageChunk = envelope(req.kind() == InferenceRequest.Kind.CHAT
                        ? "chat.completion.chunk" : "text_completion");
                usageChunk.putArray("choices");
                usageChunk.set("usage", usage());
                ctx.write(sse(usageChunk));
            }
            ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(SSE_DONE)));
            var done = ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
            if (!keepAlive) {
                done.addListener(ChannelFutureListener.CLOSE);
            }
        });
    }

    private void writeStreamHead() {
        ctx.writeAndFlush(Replies.sseHead(keepAlive));
    }

    private ObjectNode envelope(String object) {
        ObjectNode root = Replies.JSON.createObjectNode();
        root.put("id", id);
        root.put("object", object);
        root.put("created", System.currentTimeMillis() / 1000);
        root.put("model", req.model());
        return root;
    }

    private ObjectNode usage() {
        ObjectNode u = Replies.JSON.createObjectNode();
        int completion = outputTokens;
        u.put("prompt_tokens", request.promptTokens());
        u.put("total_tokens", request.promptTokens() + completion);
        u.put("completion_tokens", completion);
        u.putObject("prompt_tokens_details").put("cached_tokens", request.hitTokens());
        return u;
    }

    private ObjectNode fullAnswer() {
        boolean chat = req.kind() == InferenceRequest.Kind.CHAT;
        ObjectNode root = envelope(chat ? "chat.completion" : "text_completion");
        ObjectNode c = root.putArray("choices").addObject();
        c.put("index", 0);
        if (chat) {
            ObjectNode msg = c.putObject("message");
            msg.put("role", "assistant");
            msg.put("content", output);
        } else {
            c.put("text", output);
        }
        c.putNull("logprobs");
        c.put("finish_reason", "length");
        root.set("usage", usage());
        root.put("worker_id", worker.id());
        return root;
    }

    private ObjectNode chunk(String piece, boolean last) {
        boolean chat = req.kind() == InferenceRequest.Kind.CHAT;
        ObjectNode root = envelope(chat ? "chat.completion.chunk" : "text_completion");
        ObjectNode c = root.putArray("choices").addObject();
        c.put("index", 0);
        if (chat) {
            c.putObject("delta").put("content", piece);
        } else {
            c.put("text", piece);
        }
        c.putNull("logprobs");
        if (last) {
            c.put("finish_reason", "length");
        } else {
            c.putNull("finish_reason");
        }
        return root;
    }

    private static DefaultHttpContent sse(ObjectNode event) {
        byte[] line = ("data: " + event + "\n\n").getBytes(StandardCharsets.UTF_8);
        return new DefaultHttpContent(Unpooled.wrappedBuffer(line));
    }

    /** Chained over the tokens of every full block, so equal hashes mean equal prefixes up to the block's end. */
    private static long[] blockHashes(int[] tokens, int blockSize) {
        long[] hashes = new long[tokens.length / blockSize];
        long chain = 0x9E3779B97F4A7C15L;
        for (int b = 0; b < hashes.length; b++) {
            for (int i = b * blockSize; i < (b + 1) * blockSize; i++) {
                chain = mix(chain ^ tokens[i]);
            }
            hashes[b] = chain;
        }
        return hashes;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
