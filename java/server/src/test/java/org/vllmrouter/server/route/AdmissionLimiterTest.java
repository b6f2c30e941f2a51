package org.vllmrouter.server.route;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.MockTicker;
import io.netty.util.concurrent.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.settings.AdmissionSettings;

/** The limiter on a mock clock: refills, rejections and queue timeouts happen exactly when time is advanced. */
class AdmissionLimiterTest {
    private final MockTicker clock = Ticker.newMockTicker();
    private final EmbeddedChannel loop = EmbeddedChannel.builder().ticker(clock).build();

    @AfterEach
    void close() {
        loop.finishAndReleaseAll();
    }

    /** Records what the limiter decided for one request: "admitted", "429 after 1s" or "408". */
    private final class Outcome implements AdmissionLimiter.Ticket {
        final List<String> seen = new ArrayList<>();

        @Override
        public void admitted() {
            seen.add("admitted");
        }

        @Override
        public void rejected(int status, long retryAfterSecs) {
            seen.add(status == 429 ? "429 after " + retryAfterSecs + "s" : Integer.toString(status));
        }

        String decision() {
            loop.runPendingTasks();
            return seen.size() == 1 ? seen.get(0) : seen.toString();
        }
    }

    private Outcome ask(AdmissionLimiter limiter) {
        Outcome outcome = new Outcome();
        limiter.acquire(loop.eventLoop(), outcome);
        return outcome;
    }

    private void advanceMillis(long millis) {
        clock.advance(millis, TimeUnit.MILLISECONDS);
        loop.runScheduledPendingTasks();
        loop.runPendingTasks();
    }

    @Test
    void anEmptyBucketWithoutAQueueAnswers429UntilATokenIsBack() {
        AdmissionLimiter limiter = new AdmissionLimiter(new AdmissionSettings(2, null, 0, 60), loop.eventLoop(), clock);
        assertEquals("admitted", ask(limiter).decision());
        assertEquals("admitted", ask(limiter).decision());
        assertEquals("429 after 1s", ask(limiter).decision());
        advanceMillis(499);
        assertEquals("429 after 1s", ask(limiter).decision());
        advanceMillis(1);
        assertEquals("admitted", ask(limiter).decision(), "2 tokens a second: one is back after 500 ms");
        limiter.release();
        assertEquals("admitted", ask(limiter).decision(), "a finished request gives its token back");
    }

    @Test
    void retryAfterIsTheWholeSecondsUntilTheNextToken() {
        AdmissionLimiter limiter = new AdmissionLimiter(new AdmissionSettings(1, 1, 0, 60), loop.eventLoop(), clock);
        assertEquals("admitted", ask(limiter).decision());
        assertEquals("429 after 1s", ask(limiter).decision());
        AdmissionLimiter slow = new AdmissionLimiter(new AdmissionSettings(4, 1, 0, 60), loop.eventLoop(), clock);
        for (int i = 0; i < 4; i++) {
            assertEquals("admitted", ask(slow).decision());
        }
        advanceMillis(200);
        assertEquals("429 after 1s", ask(slow).decision(), "0.8 s to go rounds up to 1");
    }

    @Test
    void aQueuedRequestIsAdmittedByARefillOrTimesOutWith408() {
        AdmissionLimiter limiter = new AdmissionLimiter(new AdmissionSettings(1, 1, 1, 2), loop.eventLoop(), clock);
        assertEquals("admitted", ask(limiter).decision());
        Outcome queued = ask(limiter);
        assertEquals("[]", queued.decision(), "waits in the queue");
        assertEquals("429 after 1s", ask(limiter).decision(), "the queue is full");
        advanceMillis(1000);
        assertEquals("admitted", queued.decision(), "the refilled token goes to the queue's head");

        Outcome late = ask(limiter);
        assertEquals("[]", late.decision());
        limiter.release();
        advanceMillis(0);
        assertEquals("admitted", late.decision(), "a released token goes to the queue's head");

        AdmissionLimiter noWait = new AdmissionLimiter(new AdmissionSettings(1, 1, 1, 0), loop.eventLoop(), clock);
        assertEquals("admitted", ask(noWait).decision());
        Outcome timedOut = ask(noWait);
        advanceMillis(0);
        assertEquals("408", timedOut.decision(), "a zero queue timeout gives up at once");
    }
}
