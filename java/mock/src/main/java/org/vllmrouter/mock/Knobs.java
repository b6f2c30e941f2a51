package org.vllmrouter.mock;

import java.util.Locale;

/**
 * The behaviour of one mock worker: identity, latency model and fault injection.
 *
 * <p>Every field is volatile and read on each request, so a test can change a running worker
 * ("worker 2 starts failing now") through {@link MockWorker#knobs()}. The same names are used on
 * the command line ({@code --status-code 503}) and in per-worker overrides
 * ({@code --worker-knob 1:status-code=503}); {@link #set(String, String)} is the one parser.
 */
public final class Knobs {

    private volatile String workerId;
    private volatile String model = "mock";
    private volatile long latencyMs;
    private volatile long prefillUsPerToken;
    private volatile long decodeUsPerToken;
    private volatile int maxConcurrency;
    private volatile int statusCode = 200;
    private volatile int failFirstN;
    private volatile double randomFailRate;
    private volatile boolean crashOnRequest;
    private volatile long healthFailAfterMs;
    private volatile boolean healthy = true;
    private volatile boolean hang;
    private volatile boolean hangHealth;
    private volatile long slowStreamMs;
    private volatile int streamChunks = 2;
    private volatile String requireApiKey;
    private volatile int blockSize = 16;
    private volatile int cacheBlocks = 65_536;
    private volatile int captureLimit = 10_000;
    private volatile int maxPayloadBytes = 10 * 1024 * 1024;
    private volatile int cpuCacheBlocks;
    private volatile boolean kvEvents;
    private volatile String kvTopic = "";
    private volatile boolean kvReplayTopicFrame;
    private volatile boolean kvHashBytes;
    private volatile int kvMalformedNext;
    private volatile int kvDropNext;
    private volatile boolean kvRestartNext;
    private volatile boolean engineModel;
    private volatile double timeScale = 1.0;
    private volatile boolean noServerInfo;
    private volatile String metricsText;

    /** Worker id reported in {@code X-Worker-Id} and {@code worker_id}; null means "worker-PORT". */
    public String workerId() { return workerId; }
    public Knobs workerId(String v) { workerId = v; return this; }

    /** Served model name ({@code /v1/models}; responses echo the request's model when it has one). */
    public String model() { return model; }
    public Knobs model(String v) { model = v; return this; }

    /** Fixed extra latency added to every inference request. */
    public long latencyMs() { return latencyMs; }
    public Knobs latencyMs(long v) { latencyMs = nonNegative("latency-ms", v); return this; }

    /** Prefill cost per prompt token that missed the prefix cache. */
    public long prefillUsPerToken() { return prefillUsPerToken; }
    public Knobs prefillUsPerToken(long v) { prefillUsPerToken = nonNegative("prefill-us-per-token", v); return this; }

    /** Decode cost per generated token. */
    public long decodeUsPerToken() { return decodeUsPerToken; }
    public Knobs decodeUsPerToken(long v) { decodeUsPerToken = nonNegative("decode-us-per-token", v); return this; }

    /** Inference requests served at once; later ones queue (FIFO). 0 = unlimited. */
    public int maxConcurrency() { return maxConcurrency; }
    public Knobs maxConcurrency(int v) { maxConcurrency = (int) nonNegative("max-concurrency", v); return this; }

    /** Any value other than 200 answers every inference request with that status. */
    public int statusCode() { return statusCode; }
    public Knobs statusCode(int v) {
        if (v < 100 || v > 599) {
            throw new IllegalArgumentException("status-code must be in 100..599, got " + v);
        }
        statusCode = v;
        return this;
    }

    /** The first N inference requests answer 500. */
    public int failFirstN() { return failFirstN; }
    public Knobs failFirstN(int v) { failFirstN = (int) nonNegative("fail-first-n", v); return this; }

    /** Probability that an inference request answers 500. */
    public double randomFailRate() { return randomFailRate; }
    public Knobs randomFailRate(double v) {
        if (!(v >= 0.0 && v <= 1.0)) {
            throw new IllegalArgumentException("random-fail-rate must be in [0, 1], got " + v);
        }
        randomFailRate = v;
        return this;
    }

    /** The first inference request closes the worker's listener and connections without answering. */
    public boolean crashOnRequest() { return crashOnRequest; }
    public Knobs crashOnRequest(boolean v) { crashOnRequest = v; return this; }

    /** After this many ms from start, {@code /health} answers 500; 0 = never. */
    public long healthFailAfterMs() { return healthFailAfterMs; }
    public Knobs healthFailAfterMs(long v) { healthFailAfterMs = nonNegative("health-fail-after-ms", v); return this; }

    /** Runtime switch: false makes {@code /health} answer 500 now. */
    public boolean healthy() { return healthy; }
    public Knobs healthy(boolean v) { healthy = v; return this; }

    /** Inference requests are received (and captured) but never answered. */
    public boolean hang() { return hang; }
    public Knobs hang(boolean v) { hang = v; return this; }

    /** {@code /health} and {@code /health_generate} are never answered. */
    public boolean hangHealth() { return hangHealth; }
    public Knobs hangHealth(boolean v) { hangHealth = v; return this; }

    /** Delay between SSE chunks, on top of the decode cost. */
    public long slowStreamMs() { return slowStreamMs; }
    public Knobs slowStreamMs(long v) { slowStreamMs = nonNegative("slow-stream-ms", v); return this; }

    /** Number of content chunks in an SSE answer (the generated tokens are spread over them). */
    public int streamChunks() { return streamChunks; }
    public Knobs streamChunks(int v) {
        if (v < 1) {
            throw new IllegalArgumentException("stream-chunks must be >= 1, got " + v);
        }
        streamChunks = v;
        return this;
    }

    /** Non-null: every route but {@code /health} needs {@code Authorization: Bearer KEY} (else 401). */
    public String requireApiKey() { return requireApiKey; }
    public Knobs requireApiKey(String v) { requireApiKey = v; return this; }

    /** Tokens per prefix-cache block (vLLM's default block size is 16). */
    public int blockSize() { return blockSize; }
    public Knobs blockSize(int v) {
        if (v < 1) {
            throw new IllegalArgumentException("block-size must be >= 1, got " + v);
        }
        blockSize = v;
        return this;
    }

    /** Prefix-cache capacity in blocks (LRU); 0 disables the cache. */
    public int cacheBlocks() { return cacheBlocks; }
    public Knobs cacheBlocks(int v) { cacheBlocks = (int) nonNegative("cache-blocks", v); return this; }

    /** How many of the latest requests are kept for {@link MockWorker#captured()}; 0 = none. */
    public int captureLimit() { return captureLimit; }
    public Knobs captureLimit(int v) { captureLimit = (int) nonNegative("capture-limit", v); return this; }

    /** Larger request bodies answer 413. Read when a connection is opened. */
    public int maxPayloadBytes() { return maxPayloadBytes; }
    public Knobs maxPayloadBytes(int v) {
        if (v < 1) {
            throw new IllegalArgumentException("max-payload-bytes must be >= 1, got " + v);
        }
        maxPayloadBytes = v;
        return this;
    }

    /** Blocks evicted from the GPU move to a CPU tier of this many blocks (vLLM's CPU offload); 0 = none. */
    public int cpuCacheBlocks() { return cpuCacheBlocks; }
    public Knobs cpuCacheBlocks(int v) { cpuCacheBlocks = (int) nonNegative("cpu-cache-blocks", v); return this; }

    /** Publish vLLM KV events over ZeroMQ (read when the worker starts). */
    public boolean kvEvents() { return kvEvents; }
    public Knobs kvEvents(boolean v) { kvEvents = v; return this; }

    /** The topic frame of every KV-event message (vLLM's default is empty). Read when the worker starts. */
    public String kvTopic() { return kvTopic; }
    public Knobs kvTopic(String v) { kvTopic = v == null ? "" : v; return this; }

    /** Replay replies carry a topic frame after the empty one (vLLM's own replies have none). */
    public boolean kvReplayTopicFrame() { return kvReplayTopicFrame; }
    public Knobs kvReplayTopicFrame(boolean v) { kvReplayTopicFrame = v; return this; }

    /** Block hashes as 32-byte digests (msgpack bin) instead of u64 integers. */
    public boolean kvHashBytes() { return kvHashBytes; }
    public Knobs kvHashBytes(boolean v) { kvHashBytes = v; return this; }

    /** The next N KV batches are each preceded by an undecodable one (its own sequence number). */
    public int kvMalformedNext() { return kvMalformedNext; }
    public Knobs kvMalformedNext(int v) { kvMalformedNext = (int) nonNegative("kv-malformed-next", v); return this; }

    /** The next N KV batches are numbered and kept for replay but not sent: a sequence gap. */
    public int kvDropNext() { return kvDropNext; }
    public Knobs kvDropNext(int v) { kvDropNext = (int) nonNegative("kv-drop-next", v); return this; }

    /**
     * The next request finds the worker restarted: an empty cache, and a KV publisher that
     * numbers from 0 again with nothing to replay. Cleared once done.
     */
    public boolean kvRestartNext() { return kvRestartNext; }
    public Knobs kvRestartNext(boolean v) { kvRestartNext = v; return this; }

    /**
     * Serve completions and chat completions with the rollout cost model ({@code EngineModel}) stepped on the wall
     * clock, its KV capacity {@code cache-blocks} blocks of 16 tokens, instead of the latency knobs. Read when the
     * worker starts.
     */
    public boolean engineModel() { return engineModel; }
    public Knobs engineModel(boolean v) { engineModel = v; return this; }

    /** With {@code engine-model}: wall seconds per modelled second (0.1 runs the model 10x faster). */
    public double timeScale() { return timeScale; }
    public Knobs timeScale(double v) {
        if (!(v > 0) || Double.isInfinite(v)) {
            throw new IllegalArgumentException("time-scale must be > 0, got " + v);
        }
        timeScale = v;
        return this;
    }
    /** {@code /get_server_info} answers 404, as vLLM 0.32's does. */
    public boolean noServerInfo() { return noServerInfo; }
    public Knobs noServerInfo(boolean v) { noServerInfo = v; return this; }

    /** Non-null: the {@code /metrics} body, instead of a {@code vllm:cache_config_info} sample with the block size. */
    public String metricsText() { return metricsText; }
    public Knobs metricsText(String v) { metricsText = v; return this; }

    /** A new instance with the same values (each worker owns its knobs). */
    public Knobs copy() {
        Knobs k = new Knobs();
        k.workerId = workerId;
        k.model = model;
        k.latencyMs = latencyMs;
        k.prefillUsPerToken = prefillUsPerToken;
        k.decodeUsPerToken = decodeUsPerToken;
        k.maxConcurrency = maxConcurrency;
        k.statusCode = statusCode;
        k.failFirstN = failFirstN;
        k.randomFailRate = randomFailRate;
        k.crashOnRequest = crashOnRequest;
        k.healthFailAfterMs = healthFailAfterMs;
        k.healthy = healthy;
        k.hang = hang;
        k.hangHealth = hangHealth;
        k.slowStreamMs = slowStreamMs;
        k.streamChunks = streamChunks;
        k.requireApiKey = requireApiKey;
        k.blockSize = blockSize;
        k.cacheBlocks = cacheBlocks;
        k.captureLimit = captureLimit;
        k.maxPayloadBytes = maxPayloadBytes;
        k.cpuCacheBlocks = cpuCacheBlocks;
        k.kvEvents = kvEvents;
        k.kvTopic = kvTopic;
        k.kvReplayTopicFrame = kvReplayTopicFrame;
        k.kvHashBytes = kvHashBytes;
        k.kvMalformedNext = kvMalformedNext;
        k.kvDropNext = kvDropNext;
        k.kvRestartNext = kvRestartNext;
        k.engineModel = engineModel;
        k.timeScale = timeScale;
        k.noServerInfo = noServerInfo;
        k.metricsText = metricsText;
        return k;
    }

    /** True when {@code name} takes no value on the command line ({@code --hang}). */
    static boolean isFlag(String name) {
        return switch (name) {
            case "crash-on-request", "hang", "hang-health", "unhealthy", "kv-events", "kv-replay-topic-frame",
                 "kv-hash-bytes", "kv-restart-next", "engine-model", "no-server-info" -> true;
            default -> false;
        };
    }

    /**
     * Sets the knob called {@code name} (command-line spelling, no dashes in front) from text.
     *
     * @throws IllegalArgumentException for an unknown name or a bad value, naming both
     */
    public Knobs set(String name, String value) {
        try {
            switch (name) {
                case "worker-id" -> workerId(value);
                case "model" -> model(value);
                case "latency-ms" -> latencyMs(Long.parseLong(value));
                case "prefill-us-per-token" -> prefillUsPerToken(Long.parseLong(value));
                case "decode-us-per-token" -> decodeUsPerToken(Long.parseLong(value));
                case "max-concurrency" -> maxConcurrency(Integer.parseInt(value));
                case "status-code" -> statusCode(Integer.parseInt(value));
                case "fail-first-n" -> failFirstN(Integer.parseInt(value));
                case "random-fail-rate" -> randomFailRate(Double.parseDouble(value));
                case "crash-on-request" -> crashOnRequest(parseBoolean(value));
                case "health-fail-after-ms" -> healthFailAfterMs(Long.parseLong(value));
                case "unhealthy" -> healthy(!parseBoolean(value));
                case "hang" -> hang(parseBoolean(value));
                case "hang-health" -> hangHealth(parseBoolean(value));
                case "slow-stream-ms" -> slowStreamMs(Long.parseLong(value));
                case "stream-chunks" -> streamChunks(Integer.parseInt(value));
                case "require-api-key" -> requireApiKey(value);
                case "block-size" -> blockSize(Integer.parseInt(value));
                case "cache-blocks" -> cacheBlocks(Integer.parseInt(value));
                case "capture-limit" -> captureLimit(Integer.parseInt(value));
                case "max-payload-bytes" -> maxPayloadBytes(Integer.parseInt(value));
                case "cpu-cache-blocks" -> cpuCacheBlocks(Integer.parseInt(value));
                case "kv-events" -> kvEvents(parseBoolean(value));
                case "kv-topic" -> kvTopic(value);
                case "kv-replay-topic-frame" -> kvReplayTopicFrame(parseBoolean(value));
                case "kv-hash-bytes" -> kvHashBytes(parseBoolean(value));
                case "kv-malformed-next" -> kvMalformedNext(Integer.parseInt(value));
                case "kv-drop-next" -> kvDropNext(Integer.parseInt(value));
                case "kv-restart-next" -> kvRestartNext(parseBoolean(value));
                case "engine-model" -> engineModel(parseBoolean(value));
                case "time-scale" -> timeScale(Double.parseDouble(value));
                case "no-server-info" -> noServerInfo(parseBoolean(value));
                case "metrics-text" -> metricsText(value);
                default -> throw new IllegalArgumentException("unknown knob: " + name);
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad value for " + name + ": " + value, e);
        }
        return this;
    }

    private static boolean parseBoolean(String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "true", "1", "yes", "on" -> true;
            case "false", "0", "no", "off" -> false;
            default -> throw new IllegalArgumentException("not a boolean: " + value);
        };
    }

    private static long nonNegative(String name, long v) {
        if (v < 0) {
            throw new IllegalArgumentException(name + " must be >= 0, got " + v);
        }
        return v;
    }
}
