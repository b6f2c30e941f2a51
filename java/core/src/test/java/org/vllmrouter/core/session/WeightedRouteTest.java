package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.vllmrouter.core.worker.Worker;

/**
 * A placing policy's route on the in-memory table: seeded random routes (new, known, re-bound as candidates change),
 * releases, expiry and eviction of a small table; after every step the structure holds (each worker's tokens are the
 * sum of its bindings'), a placement's choice is where a new session goes, and the tokens sum to the live sessions'.
 */
class WeightedRouteTest {
    private static final Duration TTL = Duration.ofSeconds(30);

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4})
    void tokensFollowEveryBindingChange(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        AtomicLong clock = new AtomicLong();
        InMemorySessionTable table = new InMemorySessionTable(TTL, 25, clock::get, Duration.ZERO);
        List<Worker> all = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            all.add(Worker.builder("http://w" + i + ":8000").build());
        }
        AtomicReference<Worker> placed = new AtomicReference<>();
        for (int step = 0; step < 2_000; step++) {
            String where = "seed " + seed + " step " + step;
            int op = random.nextInt(100);
            String id = "s" + random.nextInt(40);
            if (op < 70) {
                List<Worker> candidates = all.stream().filter(w -> random.nextInt(10) > 0).toList();
                if (candidates.isEmpty()) {
                    continue;
                }
                long tokens = random.nextLong(1, 100_000);
                placed.set(null);
                SessionTable.Assignment a = table.route(random.nextBoolean() ? "" : "m", id, candidates,
                        (c, sessionId, t, tokensOf) -> {
                            assertEquals(tokens, t, where);
                            Worker w = c.get(random.nextInt(c.size()));
                            placed.set(w);
                            return w;
                        }, tokens);
                if (a.outcome() == SessionTable.Outcome.EXISTING) {
                    assertEquals(null, placed.get(), where + ": a known session is not placed again");
                } else {
                    assertSame(placed.get(), a.worker(), where);
                }
            } else if (op < 85) {
                table.release(id);
            } else if (op < 95) {
                clock.addAndGet(Duration.ofSeconds(random.nextInt(1, 10)).toNanos());
            } else {
                table.expireIdle(random.nextInt(1, 10));
            }
            table.checkStructure();
            assertTrue(table.boundTokens().values().stream().allMatch(t -> t > 0), where);
        }
        clock.addAndGet(TTL.toNanos());
        table.expireIdle(Integer.MAX_VALUE);
        assertTrue(table.boundTokens().isEmpty(), "every session expired, and its tokens with it");
    }
}
