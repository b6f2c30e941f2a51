package org.vllmrouter.core.config;

/** How requests are split between prefill and decode workers, from the two RouterArgs booleans. */
public enum PdMode {
    /** Regular routing: one worker per request. */
    NONE,
    /** {@code pd_disaggregation}: SGLang's bootstrap style, prefill and decode at the same time. */
    SGLANG_BOOTSTRAP,
    /** {@code vllm_pd_disaggregation}: prefill first, then decode. */
    VLLM
}
