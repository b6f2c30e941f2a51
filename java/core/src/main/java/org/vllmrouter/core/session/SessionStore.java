package org.vllmrouter.core.session;

/**
 * Where the sticky sessions of one router live, and what its tables share (a connection, a background thread).
 * {@code memory} keeps them in this process; a shared store (Redis) lets several router replicas, and a restarted
 * router, see the same sessions. Policies only see the {@link SessionTable}s it hands out.
 */
public interface SessionStore extends AutoCloseable {

    /**
     * The table of one sticky_least_loaded policy instance. {@code scope} names the instance (the default policy,
     * prefill, decode, or a model's own policy), so two instances never share sessions; replicas that share a
     * store and name the same scope share its sessions.
     */
    SessionTable table(String scope);

    /** What the store is, for {@code GET /sessions} and logs: {@code memory}, or its URL without the password. */
    String description();

    /**
     * True while a shared store cannot be reached (or answers too slowly) and routing falls back to this router's
     * own view of the sessions; such decisions are reconciled with the store when it answers again.
     */
    boolean degraded();

    /** Stops background work and closes connections; the tables must not be used afterwards. */
    @Override
    void close();
}
