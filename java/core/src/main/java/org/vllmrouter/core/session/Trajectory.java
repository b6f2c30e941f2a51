package org.vllmrouter.core.session;

import java.util.ArrayList;
import java.util.List;

/**
 * The router's view of one session's trajectory: the prompt tokens and prefix-cached tokens its workers reported
 * ({@code usage.prompt_tokens} and {@code usage.prompt_tokens_details.cached_tokens}, summed over the turns that
 * carried them), its turns (requests that ended), and how often it was re-bound to a worker (its worker became
 * unavailable, or it came back after the TTL). {@code cachedTokens} is -1 while no worker reported a cached count
 * (vLLM reports it only with {@code --enable-prompt-tokens-details}), so a missing report never reads as a miss.
 * {@code workers}: the workers it is bound to, one per pool (model).
 */
public record Trajectory(List<String> workers, long promptTokens, long cachedTokens, int turns, int workerChanges) {
    public static final long NOT_REPORTED = -1;

    public Trajectory {
        workers = List.copyOf(workers);
    }

    /** The share of prompt tokens found in the workers' prefix caches, or -1 when none was reported. */
    public double cachedTokenRate() {
        return cachedTokens < 0 || promptTokens <= 0 ? -1 : Math.min(1.0, (double) cachedTokens / promptTokens);
    }

    /** The same session seen by two tables (two pools, or the prefill and decode policies). */
    public Trajectory plus(Trajectory other) {
        List<String> both = new ArrayList<>(workers);
        both.addAll(other.workers);
        long cached = cachedTokens < 0 ? other.cachedTokens
                : other.cachedTokens < 0 ? cachedTokens : cachedTokens + other.cachedTokens;
        return new Trajectory(both, promptTokens + other.promptTokens, cached, turns + other.turns,
                workerChanges + other.workerChanges);
    }

    /** Adds one turn's report to running sums; a negative report (usage absent) adds nothing. */
    static long add(long sum, long reported) {
        if (reported < 0) {
            return sum;
        }
        return sum < 0 ? reported : sum + reported;
    }
}
