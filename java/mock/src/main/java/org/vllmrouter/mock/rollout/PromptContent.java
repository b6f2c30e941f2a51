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
    /**
     * Tokens as English words for a real model: each word, after a space, is one token of the real-vLLM tests' tiny
     * model (its byte-level BPE tokenizer, trained on the Python standard library's source), so a prompt of n words is
     * n tokens there and a longer prompt's tokens extend a shorter one's.
     */
    private static final String[] WORDS = (
            "about above action actually added address after again alias allow already also always another "
            + "archive args argument arguments attribute available avoid back base because been before being "
            + "below between block both buffer bytes cache call called calls case cases change character check "
            + "child class classes close code command common compute context copy correct could create current "
            + "data default defaults defined dict different digits directly directory does doesn done during "
            + "each either else empty encoding error even example exception extra field fields file filename "
            + "files find first flag flags following format found frame from function functions given handle "
            + "have header here http ignore import input instance instead integer into itself just know last "
            + "least length level like line lines list local locale long look loop make mapping match matching "
            + "means member message method methods might mode module more most must name names namespace "
            + "necessary need needed negative never next normal number object objects only open option options "
            + "order other output package parameter part passed path paths pickle point possible precision "
            + "prefix present previous process protocol python raise raised read real reference remove response "
            + "result return returned returns root same self server should since single size socket some source "
            + "special specific stack standard start state still string strings subclass such support supported "
            + "sure test text than that their them then there these they this thread threads through time "
            + "trailing tuple type types unless until updated used user uses using value values variable "
            + "version want were what when where whether which will with without work would write year zero").split(" ");

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

    /** The first {@code tokens} tokens of {@code t}'s context as text for a real model: a space and a word each. */
    public static String words(Trajectory t, int tokens) {
        long group = stringKey(t.group());
        long own = stringKey(t.sessionId());
        int taskEnd = t.systemTokens() + t.taskTokens();
        StringBuilder text = new StringBuilder(tokens * 8);
        for (int i = 0; i < tokens; i++) {
            long owner = i < t.systemTokens() ? SYSTEM_OWNER : i < taskEnd ? group : own;
            text.append(' ').append(WORDS[Math.floorMod(token(owner, i), WORDS.length)]);
        }
        return text.toString();
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
