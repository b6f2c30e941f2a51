package org.vllmrouter.mock.rollout;

/**
 * One request of a trajectory. {@code delaySeconds}: for the first turn, when the trajectory starts after the batch
 * starts; for a later turn, the tool's think time between the previous answer and this request. {@code promptTokens}:
 * the whole context sent (system prompt, task, and every earlier output and tool result). {@code abandoned}: the
 * client disconnects after {@code outputTokens} tokens have been generated, and the trajectory ends there.
 */
public record Turn(double delaySeconds, int promptTokens, int outputTokens, boolean abandoned) {
}
