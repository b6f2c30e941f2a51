package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** How many event loops a router runs, by default and with {@code TOKIO_WORKER_THREADS}. */
class EventLoopCountTest {
    @Test
    void unsetTakesHalfTheProcessorsAtLeastOneAtMostEight() {
        assertEquals(1, EventLoopCount.resolve(null, 1));
        assertEquals(1, EventLoopCount.resolve(null, 2));
        assertEquals(1, EventLoopCount.resolve(null, 3));
        assertEquals(2, EventLoopCount.resolve(null, 4));
        assertEquals(8, EventLoopCount.resolve(null, 16));
        assertEquals(8, EventLoopCount.resolve(null, 128));
    }

    @Test
    void aSetCountIsTakenAsItIsWhateverTheProcessors() {
        assertEquals(2, EventLoopCount.resolve("2", 2));
        assertEquals(1, EventLoopCount.resolve(" 1 ", 64));
        assertEquals(32, EventLoopCount.resolve("32", 2));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "0", "-1", "two", "1.5", "99999999999"})
    void anythingButAPositiveWholeNumberIsRefusedNamingTheVariable(String requested) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EventLoopCount.resolve(requested, 2));
        assertEquals("TOKIO_WORKER_THREADS must be a positive whole number of event loops; got '" + requested + "'",
                e.getMessage());
    }
}
