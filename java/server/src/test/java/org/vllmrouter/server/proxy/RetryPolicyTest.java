package org.vllmrouter.server.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.settings.RetrySettings;

/** The retry flags as the proxy reads them: attempts, and the backoff's start, growth, cap and jitter. */
class RetryPolicyTest {
    private static RetryPolicy retry(String json) throws Exception {
        return RetryPolicy.from(RetrySettings.from(RouterConfig.fromJson(json)));
    }

    @Test
    void backoffStartsAtTheInitialDelayGrowsByTheMultiplierAndStopsAtTheCap() throws Exception {
        RetryPolicy retry = retry("{\"retry_max_retries\": 4,"
                + " \"retry_initial_backoff_ms\": 100, \"retry_backoff_multiplier\": 2.0,"
                + " \"retry_max_backoff_ms\": 250, \"retry_jitter_factor\": 0.0}");
        assertEquals(4, retry.maxAttempts());
        assertEquals(100, TimeUnit.NANOSECONDS.toMillis(retry.backoffNanos(1)));
        assertEquals(200, TimeUnit.NANOSECONDS.toMillis(retry.backoffNanos(2)));
        assertEquals(250, TimeUnit.NANOSECONDS.toMillis(retry.backoffNanos(3)));
    }

    @Test
    void jitterSpreadsTheBackoffWithinItsFactor() throws Exception {
        RetryPolicy retry = retry("{\"retry_initial_backoff_ms\": 1000,"
                + " \"retry_max_backoff_ms\": 1000, \"retry_jitter_factor\": 0.5}");
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            long ms = TimeUnit.NANOSECONDS.toMillis(retry.backoffNanos(1));
            assertTrue(ms >= 500 && ms <= 1500, ms + " ms");
            seen.add(ms);
        }
        assertTrue(seen.size() > 1, "jitter varies the delay");
    }

    @Test
    void disableRetriesMeansOneAttempt() throws Exception {
        assertEquals(1, retry("{\"disable_retries\": true, \"retry_max_retries\": 5}").maxAttempts());
    }
}
