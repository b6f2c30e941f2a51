package org.vllmrouter.core.policy;

import org.vllmrouter.core.worker.Worker;

/**
 * How much of one prompt each candidate already holds in its KV cache, as the route found it before the policy
 * selects, and where the policy reports what it decided (the route counts it).
 */
public interface PrefixResidency {
    /** Nothing is known: no tokens, no credit, the choice is made on load alone. */
    PrefixResidency UNKNOWN = new PrefixResidency() {
        @Override
        public int inputTokens() {
            return 0;
        }

        @Override
        public int creditedTokens(Worker worker) {
            return 0;
        }
    };

    /** Prompt tokens; 0 when the tokens could not be found. */
    int inputTokens();

    /**
     * The prompt tokens {@code worker} need not compute again: its cached leading blocks weighted by the tier that
     * holds them, at most the prompt's full blocks before its last token (which is always computed).
     */
    int creditedTokens(Worker worker);

    /**
     * The KV blocks {@code worker} holds in all, of any prompt, as its events report them; 0 when unknown. It tells
     * apart workers that hold nothing of this prompt: the emptier cache has more room for a new one.
     */
    default int heldBlocks(Worker worker) {
        return 0;
    }

    /** The policy chose {@code worker}; {@code outcome} says on what ground (prefix_cost, sticky_hit, missing_tokens). */
    default void decided(Worker worker, String outcome) {
    }
}
