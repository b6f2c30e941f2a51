package org.vllmrouter.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionStoreException;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.SessionTable.Outcome;
import org.vllmrouter.core.worker.Worker;

/**
 * The shared table on a three-node Redis Cluster (the URL names one node), and what only a cluster has: pools on
 * different primaries, a tracked connection to each, a primary that fails and comes back without its keys.
 */
class ClusterSessionTableTest extends SessionTableOnRedisTests {
    @Override
    TestRedis startRedis() throws Exception {
        return RedisCluster.start(3);
    }

    private RedisCluster cluster() {
        return (RedisCluster) redis;
    }

    @Test
    void aDatabaseOtherThanZeroIsRefusedWithOneLine() {
        SessionStoreException e = assertThrows(SessionStoreException.class,
                () -> RedisSessionStore.open(redis.url() + "/2", TTL, clock::get));
        assertEquals("Session store " + redis.url() + "/2: the server is a Redis Cluster node, and a cluster has "
                + "only database 0; drop /2 from the URL", e.getMessage());
    }

    @Test
    void anyNodeIsAnEntryPointAndPoolsOnEveryPrimaryAreShared() throws Exception {
        List<String> pools = cluster().poolsOnEveryNode("default");
        RedisSessionStore storeA = replica();
        RedisSessionTable a = (RedisSessionTable) storeA.table("default");
        RedisSessionStore storeB = RedisSessionStore.open(cluster().node(2).url(), TTL, clock::get);
        stores.add(storeB);
        SessionTable b = storeB.table("default");
        Map<String, Worker> first = new HashMap<>();
        for (String pool : pools) {
            first.put(pool, a.route(pool, "s", workers).worker());
            SessionTable.Assignment onB = b.route(pool, "s", workers);
            assertEquals(Outcome.EXISTING, onB.outcome(), pool);
            assertSame(first.get(pool), onB.worker(), pool);
        }
        for (int node = 0; node < pools.size(); node++) {
            assertEquals("1", cluster().node(node).cli("EXISTS", Keys.pool("default", pools.get(node)).binding("s")),
                    "pool " + pools.get(node) + " lives on node " + node);
        }
        for (String pool : pools) {
            List<Worker> others = new ArrayList<>(workers);
            others.remove(first.get(pool));
            assertEquals(Outcome.REBOUND, b.route(pool, "s", others).outcome(), pool);
            eventually("the primary of " + pool + " tells a that b moved its session",
                    () -> a.cachedWorker(pool, "s") == null);
        }
        assertEquals(pools.size(), b.release("s"), "a release reaches the pools on every primary");
        SessionStats stats = a.stats();
        assertEquals(0, stats.activeSessions());
        assertEquals(pools.size(), stats.started());
        assertFalse(storeA.degraded() || storeB.degraded());
    }

    /**
     * A script's reply must reach the near cache before any later invalidation of its keys, which holds only when
     * both come over one connection: the scripts run on the tracked ones.
     */
    @Test
    void eachPrimaryCarriesOneTrackedConnectionOfEachStoreAndItsScriptsRunThere() throws Exception {
        SessionTable a = replica().table("default");
        SessionTable b = replica().table("default");
        for (String pool : cluster().poolsOnEveryNode("default")) {
            a.route(pool, "s", workers);
            b.route(pool, "t", workers);
        }
        for (int node = 0; node < cluster().size(); node++) {
            List<String> clients = cluster().node(node).cli("CLIENT", "LIST").lines().toList();
            List<String> tracked = clients.stream().filter(c -> c.matches(".* flags=[A-Za-z]*t[A-Za-z]* .*")).toList();
            assertEquals(2, tracked.size(), "node " + node + ": " + clients);
            assertTrue(clients.stream().filter(c -> c.matches(".* cmd=(evalsha|eval) .*")).allMatch(tracked::contains),
                    "node " + node + ": " + clients);
            assertTrue(cluster().node(node).cli("INFO", "commandstats").contains("cmdstat_evalsha:calls="),
                    "scripts ran on node " + node);
        }
    }

    @Test
    void aPrimaryThatFailsIsAFaultAndItsPoolsComeBackWhenItReturns() throws Exception {
        List<String> pools = cluster().poolsOnEveryNode("default");
        RedisSessionStore storeA = replica();
        RedisSessionStore storeB = replica();
        SessionTable a = storeA.table("default");
        SessionTable b = storeB.table("default");
        Map<String, String> bound = new HashMap<>();
        Map<String, String> boundByB = new HashMap<>();
        for (String pool : pools) {
            for (int i = 0; i < 10; i++) {
                String id = pool + "-s" + i;
                SessionTable by = i % 2 == 0 ? a : b;
                bound.put(pool + "/" + id, by.route(pool, id, workers).worker().url());
                if (by == b) {
                    boundByB.put(pool + "/" + id, bound.get(pool + "/" + id));
                }
            }
        }
        RedisServer failing = cluster().node(1);
        failing.kill();
        eventually("both replicas notice", () -> storeA.degraded() && storeB.degraded());
        SessionTable.Assignment during = a.route(pools.get(1), "new-during", workers);
        assertEquals(Outcome.STARTED, during.outcome(), "routed on a's own view, no error");
        bound.put(pools.get(1) + "/new-during", during.worker().url());
        for (Map.Entry<String, String> e : boundByB.entrySet()) {
            String[] poolAndId = e.getKey().split("/");
            assertEquals(e.getValue(), b.route(poolAndId[0], poolAndId[1], workers).worker().url(),
                    "b's own sessions stay put: " + e.getKey());
        }

        failing.restart();
        cluster().awaitOk();
        eventually("both replicas reconciled", () -> !storeA.degraded() && !storeB.degraded());
        for (Map.Entry<String, String> e : bound.entrySet()) {
            String[] poolAndId = e.getKey().split("/");
            SessionTable.Assignment again = b.route(poolAndId[0], poolAndId[1], workers);
            assertEquals(Outcome.EXISTING, again.outcome(), e.getKey());
            assertEquals(e.getValue(), again.worker().url(), e.getKey());
        }
        SessionStats stats = b.stats();
        assertEquals(bound.size(), stats.activeSessions(), stats.toString());
        assertEquals(bound.size(), stats.activeByWorker().values().stream().mapToInt(Integer::intValue).sum());
        assertTrue(stats.activeByWorker().values().stream().allMatch(n -> n > 0));
        assertNotEquals("0", cluster().node(1).cli("DBSIZE"), "the returned primary holds its pool again");
    }
}
