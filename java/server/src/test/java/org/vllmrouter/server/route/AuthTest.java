package org.vllmrouter.server.route;

import org.vllmrouter.server.proxy.WorkerTls;
import org.vllmrouter.server.worker.ControlClient;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.vllmrouter.mock.MockConfig;
import org.vllmrouter.mock.MockWorker;
import org.vllmrouter.mock.MockWorkers;
import org.vllmrouter.server.proxy.Transport;
import org.vllmrouter.core.config.StartEnvironment;

/** The verdict cache of inbound key validation stays within its size and forgets verdicts after its TTL. */
class AuthTest {
    private static MockWorkers mock;
    private static MockWorker validator;
    private static EventLoopGroup group;
    private static EventLoop loop;

    @BeforeAll
    static void start() {
        mock = MockWorkers.start(MockConfig.builder().count(1).all(k -> k.requireApiKey("good")).build());
        validator = mock.worker(0);
        group = Transport.resolve(StartEnvironment.current().transport()).newGroup(1, "auth-test");
        loop = group.next();
    }

    @AfterAll
    static void stop() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        mock.close();
    }

    private static final ControlClient CLIENT = new ControlClient(WorkerTls.trusting(null),
            new DefaultChannelGroup(GlobalEventExecutor.INSTANCE));

    private static HttpHeaders bearer(String token) {
        return new DefaultHttpHeaders().set("Authorization", "Bearer " + token);
    }

    private static long validations() {
        return validator.captured("/v1/models").size();
    }

    @Test
    void distinctBadTokensCannotGrowTheCacheBeyondItsSize() {
        Auth auth = new Auth(null, List.of(validator.url() + "/v1/models"), CLIENT, 50, Duration.ofHours(1),
                com.github.benmanes.caffeine.cache.Ticker.systemTicker());
        for (int i = 0; i < 500; i++) {
            assertFalse(auth.validate(loop, bearer("bad-" + i)).join());
        }
        assertTrue(auth.cachedVerdicts() <= 50, "cached " + auth.cachedVerdicts());
        assertTrue(auth.evictedVerdicts() >= 450, "evicted " + auth.evictedVerdicts());
        assertTrue(auth.validate(loop, bearer("good")).join());
    }

    @Test
    void aVerdictIsReusedWithinItsTtlAndAskedAgainAfter() {
        AtomicLong now = new AtomicLong();
        Auth auth = new Auth(null, List.of(validator.url() + "/v1/models"), CLIENT, 50, Duration.ofMinutes(5), now::get);
        long asked = validations();
        assertTrue(auth.validate(loop, bearer("good")).join());
        assertTrue(auth.validate(loop, bearer("good")).join());
        assertEquals(asked + 1, validations(), "the second request used the cached verdict");
        now.addAndGet(Duration.ofMinutes(5).toNanos());
        assertTrue(auth.validate(loop, bearer("good")).join());
        assertEquals(asked + 2, validations(), "an expired verdict is asked again");
    }
}
