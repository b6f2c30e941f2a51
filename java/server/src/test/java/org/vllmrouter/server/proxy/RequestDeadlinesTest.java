package org.vllmrouter.server.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The per-loop request timeout, on an embedded event loop whose clock the test moves. */
class RequestDeadlinesTest {
    private static final long TIMEOUT_MS = 1000;

    private EmbeddedChannel channel;
    private RequestDeadlines deadlines;
    private final List<String> timedOut = new ArrayList<>();

    private final class Exchange extends RequestDeadlines.Timed {
        final String name;
        final Runnable onDeadline;

        Exchange(String name) {
            this(name, () -> { });
        }

        Exchange(String name, Runnable onDeadline) {
            this.name = name;
            this.onDeadline = onDeadline;
        }

        @Override
        void deadlinePassed() {
            timedOut.add(name);
            onDeadline.run();
        }
    }

    @BeforeEach
    void setUp() {
        channel = new EmbeddedChannel();
        channel.freezeTime();
        EventLoop loop = channel.eventLoop();
        deadlines = new RequestDeadlines(loop, TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS));
    }

    @AfterEach
    void tearDown() {
        channel.finishAndReleaseAll();
    }

    private void advance(long millis) {
        channel.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
    }

    @Test
    void anExchangeTimesOutAtItsDeadlineAndNotBefore() {
        deadlines.add(new Exchange("a"));
        advance(TIMEOUT_MS - 1);
        assertEquals(List.of(), timedOut);
        advance(1);
        assertEquals(List.of("a"), timedOut);
        advance(10 * TIMEOUT_MS);
        assertEquals(List.of("a"), timedOut, "an exchange times out once");
    }

    @Test
    void anExchangeThatEndsInTimeNeverTimesOutAndTheNextOneStillDoes() {
        Exchange a = new Exchange("a");
        Exchange b = new Exchange("b");
        deadlines.add(a);
        advance(400);
        deadlines.add(b);
        advance(100);
        deadlines.remove(a);
        // a's deadline: the timer finds b not yet due and waits for it.
        advance(500);
        assertEquals(List.of(), timedOut);
        advance(399);
        assertEquals(List.of(), timedOut);
        advance(1);
        assertEquals(List.of("b"), timedOut);
    }

    @Test
    void exchangesPastTheirDeadlineTimeOutTogetherInStartOrder() {
        deadlines.add(new Exchange("a"));
        advance(10);
        deadlines.add(new Exchange("b"));
        advance(10);
        deadlines.add(new Exchange("c"));
        // The loop was late: all three are due when the timer runs.
        advance(5 * TIMEOUT_MS);
        assertEquals(List.of("a", "b", "c"), timedOut);
    }

    @Test
    void anExchangeStartedWhileOthersTimeOutGetsItsWholeTimeout() {
        Exchange retried = new Exchange("retried");
        deadlines.add(new Exchange("a", () -> deadlines.add(retried)));
        deadlines.add(new Exchange("b"));
        advance(TIMEOUT_MS);
        assertEquals(List.of("a", "b"), timedOut);
        advance(TIMEOUT_MS - 1);
        assertEquals(List.of("a", "b"), timedOut);
        advance(1);
        assertEquals(List.of("a", "b", "retried"), timedOut);
    }

    @Test
    void removingAnExchangeTwiceOrOneNeverAddedChangesNothing() {
        Exchange a = new Exchange("a");
        Exchange b = new Exchange("b");
        Exchange never = new Exchange("never");
        deadlines.add(a);
        deadlines.add(b);
        deadlines.remove(a);
        deadlines.remove(a);
        deadlines.remove(never);
        advance(TIMEOUT_MS);
        assertEquals(List.of("b"), timedOut);
    }

    @Test
    void theListEmptiesAndFillsAgain() {
        Exchange a = new Exchange("a");
        deadlines.add(a);
        deadlines.remove(a);
        advance(TIMEOUT_MS);
        deadlines.add(new Exchange("b"));
        advance(TIMEOUT_MS);
        assertEquals(List.of("b"), timedOut);
    }
}
