package org.vllmrouter.mock.rollout;

import java.util.List;

/**
 * One sample of a group: its session id ({@code {instance_id}_{repetition_id}}, as SkyRL builds it, so the group is
 * the part before the last {@code _}), the shared system prompt and the group's task prompt that open its context,
 * and its turns in order.
 */
public record Trajectory(String sessionId, int systemTokens, int taskTokens, List<Turn> turns) {
    public Trajectory {
        turns = List.copyOf(turns);
    }

    /** The group (GRPO's unit): the session id up to its last {@code _}, the whole id when it has none. */
    public String group() {
        return groupOf(sessionId);
    }

    public static String groupOf(String sessionId) {
        int cut = sessionId.lastIndexOf('_');
        return cut < 0 ? sessionId : sessionId.substring(0, cut);
    }

    public boolean abandoned() {
        return turns.get(turns.size() - 1).abandoned();
    }

    /** Tokens of the context after the last turn: its prompt and its output. */
    public int finalContextTokens() {
        Turn last = turns.get(turns.size() - 1);
        return last.promptTokens() + last.outputTokens();
    }
}
