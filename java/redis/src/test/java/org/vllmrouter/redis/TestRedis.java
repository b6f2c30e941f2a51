package org.vllmrouter.redis;

/** A real Redis of this test run that a store connects to: one {@link RedisServer}, or a {@link RedisCluster}. */
interface TestRedis extends AutoCloseable {
    /** The URL a router is given. */
    String url();

    /** Runs one command with redis-cli as a client would (on a cluster, at the node that owns its key). */
    String cli(String... args) throws Exception;

    /** Drops every key. */
    void flushAll() throws Exception;

    /** Every server stops answering, connections stay open. */
    void pause() throws Exception;

    void resume() throws Exception;
}
