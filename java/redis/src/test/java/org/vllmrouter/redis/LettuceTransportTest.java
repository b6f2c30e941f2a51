package org.vllmrouter.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.resource.EpollProvider;
import io.lettuce.core.resource.IOUringProvider;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Lettuce beside the engine's io_uring transport: it finds io_uring on the class path, and with epoll there too it
 * would warn at every start that it chose epoll. The store keeps it on epoll without the warning.
 */
class LettuceTransportTest {
    @Test
    void theStoreKeepsLettuceOnEpollSoItHasNoChoiceToWarnAbout() throws Exception {
        try (RedisServer redis = RedisServer.start()) {
            RedisSessionStore store = RedisSessionStore.open("redis://127.0.0.1:" + redis.port(), Duration.ofHours(2),
                    System::currentTimeMillis);
            store.close();
        }
        assertEquals("false", System.getProperty(StoreConnection.LETTUCE_IO_URING));
        assertFalse(IOUringProvider.isAvailable(), "Lettuce would see two native transports and warn");
        assertTrue(EpollProvider.isAvailable());
    }
}
