package org.vllmrouter.redis;

import io.lettuce.core.RedisFuture;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Supplier;

/**
 * One pool's near cache of bindings (session id -> worker URL), so that a request of a known session costs no round
 * trip. It is right because the server tells this router of every change to a binding key it did not make itself
 * ({@link InvalidationTracking}), and this router's own script replies are applied to it on the I/O thread. It also
 * holds the bindings this router made while the store did not answer ({@code local}), which invalidations never drop,
 * and the cached bindings used since their last use was last written back.
 */
final class NearCache {
    /**
     * A cached binding; {@code local} when this router made it while the store did not answer, {@code ownWrite}
     * while the invalidation of this router's own write of it is still to come.
     */
    static final class Binding {
        final String sessionId;
        final String url;
        final boolean local;
        volatile long lastUsedMillis;
        volatile boolean touched;
        volatile boolean ownWrite;

        Binding(String sessionId, String url, boolean local, long lastUsedMillis) {
            this.sessionId = sessionId;
            this.url = url;
            this.local = local;
            this.lastUsedMillis = lastUsedMillis;
        }

        static Binding written(String sessionId, String url, long lastUsedMillis) {
            Binding b = new Binding(sessionId, url, false, lastUsedMillis);
            b.ownWrite = true;
            return b;
        }
    }

    private final ConcurrentHashMap<String, Binding> bindings = new ConcurrentHashMap<>();
    /** Cached bindings used since their last use was last written back. */
    private final ConcurrentLinkedQueue<Binding> touched = new ConcurrentLinkedQueue<>();

    Binding get(String sessionId) {
        return bindings.get(sessionId);
    }

    /** Returns the binding it replaced, or null. */
    Binding put(Binding b) {
        return bindings.put(b.sessionId, b);
    }

    Binding remove(String sessionId) {
        return bindings.remove(sessionId);
    }

    boolean remove(Binding b) {
        return bindings.remove(b.sessionId, b);
    }

    /** {@code replacement} takes the place of {@code old} unless the cache moved on meanwhile. */
    void replace(Binding old, Binding replacement) {
        bindings.replace(old.sessionId, old, replacement);
    }

    /** The bindings the store holds too (not made on this router's own). */
    List<Binding> stored() {
        return bindings.values().stream().filter(b -> !b.local).toList();
    }

    /**
     * The server says the binding key changed. Redis (7.0) also says so for this router's own script writes,
     * NOLOOP notwithstanding, right after their reply and possibly merged with another router's later write;
     * so a binding this router wrote itself is read back once before it is trusted or dropped. A binding made on
     * this router's own waits for its adoption either way.
     */
    void invalidated(String sessionId, Supplier<RedisFuture<String>> readBack) {
        Binding b = bindings.get(sessionId);
        if (b == null || b.local) {
            return;
        }
        if (!b.ownWrite) {
            bindings.remove(sessionId, b);
            return;
        }
        b.ownWrite = false;
        // Unread (the connection failed): kept; reconciling after the failure checks every cached binding.
        readBack.get().thenAccept(url -> {
            if (!b.url.equals(url)) {
                bindings.remove(sessionId, b);
            }
        });
    }

    /** This router released or expired the session in the store. */
    void forget(String sessionId) {
        Binding b = bindings.get(sessionId);
        if (b != null && !b.local) {
            bindings.remove(sessionId, b);
        }
    }

    /** The server's database was flushed. */
    void forgetAll() {
        bindings.values().removeIf(b -> !b.local);
    }

    /** The binding was used at {@code now}; its last use is due to be written back. */
    void touch(Binding b, long now) {
        if (b.lastUsedMillis != now) {
            b.lastUsedMillis = now;
        }
        if (!b.touched) {
            b.touched = true;
            touched.add(b);
        }
    }

    /** The cached bindings of the store used since the last call; they are no longer due. */
    List<Binding> drainTouched() {
        List<Binding> used = new ArrayList<>();
        for (Binding b; (b = touched.poll()) != null; ) {
            b.touched = false;
            if (!b.local && bindings.get(b.sessionId) == b) {
                used.add(b);
            }
        }
        return used;
    }
}
