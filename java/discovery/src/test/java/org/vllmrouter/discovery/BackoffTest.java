package org.vllmrouter.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BackoffTest {
    @Test
    void doublesFromOneSecondUpToFiveMinutesAndStartsOverAfterASuccess() {
        Backoff backoff = new Backoff();
        List<Long> seconds = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            seconds.add(backoff.next().toSeconds());
        }
        assertEquals(List.of(1L, 2L, 4L, 8L, 16L, 32L, 64L, 128L, 256L, 300L, 300L, 300L), seconds);
        backoff.reset();
        assertEquals(1L, backoff.next().toSeconds());
    }
}
