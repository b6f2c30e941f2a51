package org.vllmrouter.core.config;

import java.util.List;
import java.util.Locale;

/**
 * Refuses a configuration that asks for a feature of upstream's surface this router does not build, instead of
 * accepting the flag and doing nothing: an ignored flag is a defect a user only finds in production. The flags'
 * defaults (off, unset, {@code nixl}) always pass, so drop-in callers that never set them are not affected. Runs
 * after upstream's validation, so a configuration upstream rejects gets upstream's message first.
 */
final class UnsupportedFeatures {
    /** The KV connector the vLLM PD stages implement: its transfer parameters pass from prefill to decode as is. */
    static final String BUILT_KV_CONNECTOR = "nixl";

    private UnsupportedFeatures() {}

    static void check(RouterConfig c) throws ConfigException {
        if (c.miniLb()) {
            // Python's launch_router refuses it first, in the words the contract carries for both.
            throw new ConfigException(ConfigContract.get().field("mini_lb").refusal());
        }
        if (c.enableIgw()) {
            throw unsupported("--enable-igw", "the multi-model inference-gateway mode is not built");
        }
        grpcWorker("--worker-urls", c.workerUrls());
        grpcWorker("--prefill", c.prefillUrls().stream().map(p -> p == null ? null : p.url()).toList());
        grpcWorker("--decode", c.decodeUrls());
        if (c.modelPath() != null) {
            throw unsupported("--model-path", "gRPC mode, which loads the tokenizer, is not built");
        }
        if (c.tokenizerPath() != null) {
            throw unsupported("--tokenizer-path", "gRPC mode, which loads the tokenizer, is not built");
        }
        // A scheduling config without the enable flag has met upstream's own message in ConfigValidator already.
        if (c.enableProgramScheduling() || c.programSchedulingConfigJson() != null) {
            throw unsupported("--enable-program-scheduling", "program scheduling is not built");
        }
        if (c.wasmMiddleware() != null) {
            throw unsupported("--wasm-middleware", "WASM middleware is not built");
        }
        if (c.wasmMiddlewareSha256() != null) {
            throw unsupported("--wasm-middleware-sha256", "WASM middleware is not built");
        }
        if (!c.wasmMiddlewareRoutes().isEmpty()) {
            throw unsupported("--wasm-middleware-route", "WASM middleware is not built");
        }
        if (!c.kvConnector().toLowerCase(Locale.ROOT).equals(BUILT_KV_CONNECTOR)) {
            throw unsupported("--kv-connector " + c.kvConnector(), "only " + BUILT_KV_CONNECTOR + " is built");
        }
    }

    private static void grpcWorker(String flag, List<String> urls) throws ConfigException {
        for (String url : urls) {
            if (url != null && url.startsWith("grpc://")) {
                throw unsupported(flag + " " + url, "gRPC workers are not built; give the worker's HTTP URL");
            }
        }
    }

    private static ConfigException unsupported(String flag, String why) {
        return new ConfigException(flag + " is not supported by this router (" + why + ")");
    }
}
