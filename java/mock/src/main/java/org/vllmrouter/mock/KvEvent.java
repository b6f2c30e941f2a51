package org.vllmrouter.mock;

/** What the mock's prefix cache tells its KV-event publisher, in vLLM's terms. */
sealed interface KvEvent {

    /** {@code parent} is null at the start of a prompt; {@code tokens} holds every block's tokens. */
    record Stored(long[] hashes, Long parent, int[] tokens, int blockSize, String medium) implements KvEvent {}

    record Removed(long[] hashes, String medium) implements KvEvent {}

    record Cleared() implements KvEvent {}

    String GPU = "GPU";
    String CPU = "CPU";
}
