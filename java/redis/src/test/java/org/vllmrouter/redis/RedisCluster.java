package org.vllmrouter.redis;

import io.lettuce.core.cluster.SlotHash;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Redis Cluster of real {@code redis-server} processes on loopback, primaries only, the 16384 slots split evenly
 * (node {@code i} owns the {@code i}-th range). A node keeps its cluster configuration across a kill and restart
 * (it rejoins with its slots) but not its keys.
 */
final class RedisCluster implements TestRedis {
    private static final int SLOTS = 16384;
    private final List<RedisServer> nodes;

    private RedisCluster(List<RedisServer> nodes) {
        this.nodes = nodes;
    }

    static RedisCluster start(int size) throws Exception {
        List<RedisServer> nodes = new ArrayList<>();
        RedisCluster cluster = new RedisCluster(nodes);
        try {
            for (int i = 0; i < size; i++) {
                nodes.add(RedisServer.start("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "5000"));
            }
            for (int i = 0; i < size; i++) {
                expectOk(nodes.get(i).cli("CLUSTER", "ADDSLOTSRANGE", Integer.toString(cluster.firstSlot(i)),
                        Integer.toString(cluster.firstSlot(i + 1) - 1)));
                if (i > 0) {
                    expectOk(nodes.get(i).cli("CLUSTER", "MEET", "127.0.0.1", Integer.toString(nodes.get(0).port())));
                }
            }
            cluster.awaitOk();
            return cluster;
        } catch (Exception | Error e) {
            cluster.close();
            throw e;
        }
    }

    private static void expectOk(String reply) {
        if (!reply.equals("OK")) {
            throw new IllegalStateException("redis-cli: " + reply);
        }
    }

    /** Until every node sees every other and all slots served. */
    void awaitOk() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (RedisServer node : nodes) {
            String info;
            while (!(info = node.cli("CLUSTER", "INFO")).contains("cluster_state:ok")
                    || !info.contains("cluster_known_nodes:" + nodes.size())) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the cluster did not form: " + info);
                }
                Thread.sleep(50);
            }
        }
    }

    private int firstSlot(int node) {
        return node * SLOTS / nodes.size();
    }

    RedisServer node(int i) {
        return nodes.get(i);
    }

    int size() {
        return nodes.size();
    }

    /** The node that owns {@code key}'s slot. */
    int nodeOf(String key) {
        int slot = SlotHash.getSlot(key);
        int i = 0;
        while (slot >= firstSlot(i + 1)) {
            i++;
        }
        return i;
    }

    /** One pool name of {@code scope} per node, in node order: pool {@code i}'s keys live on node {@code i}. */
    List<String> poolsOnEveryNode(String scope) {
        String[] found = new String[nodes.size()];
        int missing = found.length;
        for (int k = 0; missing > 0; k++) {
            String name = "m" + k;
            int owner = nodeOf(Keys.pool(scope, name).idle());
            if (found[owner] == null) {
                found[owner] = name;
                missing--;
            }
        }
        return List.of(found);
    }

    @Override
    public String url() {
        return nodes.get(0).url();
    }

    @Override
    public String cli(String... args) throws Exception {
        String[] followingRedirects = new String[args.length + 1];
        followingRedirects[0] = "-c";
        System.arraycopy(args, 0, followingRedirects, 1, args.length);
        return nodes.get(0).cli(followingRedirects);
    }

    @Override
    public void flushAll() throws Exception {
        for (RedisServer node : nodes) {
            node.flushAll();
        }
    }

    @Override
    public void pause() throws Exception {
        for (RedisServer node : nodes) {
            node.pause();
        }
    }

    @Override
    public void resume() throws Exception {
        for (RedisServer node : nodes) {
            node.resume();
        }
    }

    @Override
    public void close() throws Exception {
        for (RedisServer node : nodes) {
            node.close();
        }
    }
}
