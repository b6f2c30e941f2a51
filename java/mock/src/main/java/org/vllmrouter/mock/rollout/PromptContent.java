package org.vllmrouter.mock.rollout;

/**
 * The tokens of a trajectory's context, made up but consistent: the system prompt's tokens are the same in every
 * trajectory, the task prompt's in every sample of a group, and everything after them (outputs, tool results) is the
 * trajectory's own. A turn's prompt is the first {@code promptTokens} of the trajectory's context, so a later turn
 * extends the earlier one exactly, as a chat history does.
 */
public final class PromptContent {
    private static final long SYSTEM_OWNER = 0x5157_3e11_9a2dL;
    /** Tokens are rendered as CJK ideographs, one char each, so text prefixes and token prefixes coincide. */
    private static final char FIRST_CHAR = '\u4e00';
    private static final int CHAR_RANGE = 20000;

    private PromptContent() {
    }

    /** The token at {@code position} of {@code t}'s context (any non-negative position). */
    public static long token(Trajectory t, int position) {
        return token(ownerOf(t, position), position);
    }

    private static long token(long owner, int position) {
        return Mixing.mix(owner, position);
    }

    private static long ownerOf(Trajectory t, int position) {
        if (position < t.systemTokens()) {
            return SYSTEM_OWNER;
        }
        if (position < t.systemTokens() + t.taskTokens()) {
            return stringKey(t.group());
        }
        return stringKey(t.sessionId());
    }

    /**
     * The hash of each full block of {@code t}'s final context, chained as vLLM's prefix cache chains them (a block's
     * hash covers every token before it), so two contexts share a block hash exactly when they share the prefix up
     * to the block's end.
     */
    public static long[] blockHashes(Trajectory t, int blockSize) {
        int blocks = t.finalContextTokens() / blockSize;
        long[] hashes = new long[blocks];
        long chain = 0;
        int position = 0;
        long group = stringKey(t.group());
        long own = stringKey(t.sessionId());
        int taskEnd = t.systemTokens() + t.taskTokens();
        for (int b = 0; b < blocks; b++) {
            for (int i = 0; i < blockSize; i++, position++) {
                long owner = position < t.systemTokens() ? SYSTEM_OWNER : position < taskEnd ? group : own;
                chain = Mixing.mix(chain, token(owner, position));
            }
            hashes[b] = chain;
        }
        return hashes;
    }

    /** The first {@code tokens} tokens of {@code t}'s context as text, one char per token. */
    public static String text(Trajectory t, int tokens) {
        long group = stringKey(t.group());
        long own = stringKey(t.sessionId());
        int taskEnd = t.systemTokens() + t.taskTokens();
        char[] chars = new char[tokens];
        for (int i = 0; i < tokens; i++) {
            long owner = i < t.systemTokens() ? SYSTEM_OWNER : i < taskEnd ? group : own;
            chars[i] = (char) (FIRST_CHAR + Math.floorMod(token(owner, i), CHAR_RANGE));
        }
        return new String(chars);
    }

    /**
     * Tokens {@code from} to {@code from + tokens} of the own part of the context of session {@code sessionId} (past
     * its system and task prompts), as text: what a modelled worker answers, so the next turn's prompt extends it.
     */
    public static String ownText(String sessionId, int from, int tokens) {
        long own = stringKey(sessionId);
        char[] chars = new char[tokens];
        for (int i = 0; i < tokens; i++) {
            chars[i] = (char) (FIRST_CHAR + Math.floorMod(token(own, from + i), CHAR_RANGE));
        }
        return new String(chars);
    }

    private static long stringKey(String s) {
        long h = 0x9e37_79b9_7f4a_7c15L;
        for (int i = 0; i < s.length(); i++) {
            h = Mixing.mix(h, s.charAt(i));
        }
        return h;
    }
}
