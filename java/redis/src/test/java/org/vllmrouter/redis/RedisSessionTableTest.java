package org.vllmrouter.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.Trajectory;
import org.vllmrouter.core.worker.Worker;

/** The shared table on one redis-server, and what only a single server has: passwords, databases, versions. */
class RedisSessionTableTest extends SessionTableOnRedisTests {
    @Override
    TestRedis startRedis() throws Exception {
        return RedisServer.start();
    }

    @Test
    void unreachableStoreWrongPasswordAndBadVersionAreOneLineErrors() throws Exception {
        int closedPort = RedisServer.freePort();
        SessionStoreException unreachable = assertThrows(SessionStoreException.class,
                () -> RedisSessionStore.open("redis://:pw@127.0.0.1:" + closedPort, TTL, clock::get));
        assertTrue(unreachable.getMessage().startsWith("Session store redis://***@127.0.0.1:" + closedPort + ": "),
                unreachable.getMessage());
        assertTrue(unreachable.getMessage().contains("Connection refused"), unreachable.getMessage());
        assertFalse(unreachable.getMessage().contains("\n"));

        try (RedisServer guarded = RedisServer.start("--requirepass", "right")) {
            SessionStoreException wrong = assertThrows(SessionStoreException.class,
                    () -> RedisSessionStore.open("redis://:wrong@127.0.0.1:" + guarded.port(), TTL, clock::get));
            assertTrue(wrong.getMessage().contains("WRONGPASS"), wrong.getMessage());
            assertFalse(wrong.getMessage().contains("wrong@"), wrong.getMessage());
            RedisSessionStore right = RedisSessionStore.open("redis://:right@127.0.0.1:" + guarded.port() + "/3",
                    TTL, clock::get);
            try {
                assertNotEquals(null, right.table("default").route("m", "s", workers).worker());
                assertEquals("1", guarded.cli("-a", "right", "-n", "3", "--no-auth-warning", "EXISTS",
                        Keys.pool("default", "m").binding("s")));
            } finally {
                right.close();
            }
        }
    }

    @Test
    void trajectoriesAreKeptInThisProcessAndEndWithTheirSession() throws Exception {
        List<Trajectory> ended = new ArrayList<>();
        RedisSessionStore store = RedisSessionStore.open(redis.url(), TTL, clock::get, 100, ended::add);
        try {
            SessionTable table = store.table("default");
            Worker first = table.route("m", "traj", workers).worker();
            table.turnEnded("m", "traj", 50, 0);
            Worker second = table.route("m", "traj", workers.stream().filter(w -> w != first).toList()).worker();
            table.turnEnded("m", "traj", 60, 48);
            assertEquals(new Trajectory(List.of(second.url()), 110, 48, 2, 1), table.trajectory("traj"));
            assertEquals(null, table.trajectory("other"));

            assertEquals(1, table.release("traj"));
            assertEquals(List.of(new Trajectory(List.of(), 110, 48, 2, 1)), ended);
            assertEquals(null, table.trajectory("traj"));
        } finally {
            store.close();
        }
    }

    /**
     * A server that closes every connection at once gives the error Lettuce also gives when its handshake close
     * overtakes the server's reply; the store tries again a bounded number of times, then says what it saw.
     */
    @Test
    void aServerThatClosesEveryConnectionIsTriedABoundedNumberOfTimes() throws Exception {
        AtomicInteger accepted = new AtomicInteger();
        try (ServerSocket closer = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread acceptor = new Thread(() -> {
                while (!closer.isClosed()) {
                    try (Socket ignored = closer.accept()) {
                        accepted.incrementAndGet();
                    } catch (Exception closed) {
                        return;
                    }
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            SessionStoreException failure = assertThrows(SessionStoreException.class,
                    () -> RedisSessionStore.open("redis://127.0.0.1:" + closer.getLocalPort(), TTL, clock::get));
            // Which of Lettuce's two messages for that race the last attempt ends with is the race's to decide.
            String shown = "Session store redis://127.0.0.1:" + closer.getLocalPort() + ": ";
            assertTrue(failure.getMessage().equals(shown + "Connection closed prematurely")
                    || failure.getMessage().equals(shown + "RedisHandshakeHandler not registered"),
                    failure.getMessage());
            assertEquals(4, accepted.get(), "connection attempts");
        }
    }
}
