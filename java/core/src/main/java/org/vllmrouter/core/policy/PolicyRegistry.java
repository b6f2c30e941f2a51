package org.vllmrouter.core.policy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionStore;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.session.Trajectory;

/**
 * The policy instances of one router: the default policy, optional per-model policies, and separate
 * prefill and decode instances (each a new instance even when both inherit {@code policy}, so stateful
 * policies keep independent state per role). Sticky instances take their tables from one {@link SessionStore},
 * each under its own scope ({@code default}, {@code prefill}, {@code decode}, {@code model:<name>}), which the
 * registry owns and closes.
 */
public final class PolicyRegistry implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(PolicyRegistry.class.getName());

    private final PolicySettings config;
    private final SessionStore sessionStore;
    private final LoadBalancingPolicy defaultPolicy;
    private final LoadBalancingPolicy prefillPolicy;
    private final LoadBalancingPolicy decodePolicy;
    private final Map<String, LoadBalancingPolicy> byModel = new ConcurrentHashMap<>();

    public PolicyRegistry(PolicySettings cfg, SessionStore sessionStore) {
        this.config = cfg;
        this.sessionStore = sessionStore;
        this.defaultPolicy = Policies.create(cfg.policy(), cfg, () -> sessionStore.table("default"));
        this.prefillPolicy = Policies.create(cfg.prefillPolicy() != null ? cfg.prefillPolicy() : cfg.policy(), cfg,
                () -> sessionStore.table("prefill"));
        this.decodePolicy = Policies.create(cfg.decodePolicy() != null ? cfg.decodePolicy() : cfg.policy(), cfg,
                () -> sessionStore.table("decode"));
        warnIfAffinityTtlHasNoKvAwarePolicy();
    }

    /**
     * 0.1.17 accepts {@code --kv-aware-session-affinity-ttl-secs} with any policy and uses it only in kv_aware; a
     * drop-in command line must still start, but a user who expected sessions to stick should hear that they won't.
     */
    private void warnIfAffinityTtlHasNoKvAwarePolicy() {
        if (config.kvAware().affinityTtl() == null) {
            return;
        }
        if (List.of(defaultPolicy, prefillPolicy, decodePolicy).stream().noneMatch(p -> p.name().equals(PolicyNames.KV_AWARE))) {
            LOG.warning("--kv-aware-session-affinity-ttl-secs applies to the kv_aware policy only; --policy "
                    + config.policy() + " does not use it");
        }
    }

    /** The model's own policy if one was set, else the default policy. */
    public LoadBalancingPolicy policyFor(String model) {
        if (model != null) {
            LoadBalancingPolicy p = byModel.get(model);
            if (p != null) {
                return p;
            }
        }
        return defaultPolicy;
    }

    public LoadBalancingPolicy defaultPolicy() {
        return defaultPolicy;
    }

    public LoadBalancingPolicy prefillPolicy() {
        return prefillPolicy;
    }

    public LoadBalancingPolicy decodePolicy() {
        return decodePolicy;
    }

    /**
     * Gives {@code model} its own instance of {@code policyName} unless it already has one (upstream: the
     * first worker of a model decides). Returns the model's policy.
     */
    public LoadBalancingPolicy setModelPolicy(String model, String policyName) {
        return byModel.computeIfAbsent(model, m -> Policies.create(policyName, config,
                () -> sessionStore.table("model:" + m)));
    }

    /**
     * Drops the model's own policy (upstream: when its last worker goes); in memory its sessions go with it, in a
     * shared store they stay for the other replicas and for this model's next policy.
     */
    public void removeModelPolicy(String model) {
        LoadBalancingPolicy removed = byModel.remove(model);
        if (removed != null) {
            removed.close();
        }
    }

    /** Releases the session in the default, every per-model, the prefill and the decode policy. */
    public void finishSession(String sessionId) {
        for (LoadBalancingPolicy p : all()) {
            p.finishSession(sessionId);
        }
    }

    /** Tells every instance that the KV caches of {@code workers} were emptied. */
    public void cacheReset(List<Worker> workers) {
        for (LoadBalancingPolicy p : all()) {
            p.cacheReset(workers);
        }
    }

    /** Sticky-session counters summed over every instance. */
    public SessionStats sessionStats() {
        SessionStats total = SessionStats.EMPTY;
        for (LoadBalancingPolicy p : all()) {
            total = total.plus(p.sessionStats());
        }
        return total;
    }

    /** The trajectory of {@code sessionId} summed over the instances that track it; null when none does. */
    public Trajectory trajectory(String sessionId) {
        Trajectory sum = null;
        for (LoadBalancingPolicy p : all()) {
            Trajectory t = p.trajectory(sessionId);
            if (t != null) {
                sum = sum == null ? t : sum.plus(t);
            }
        }
        return sum;
    }

    /**
     * KV-cache hit rates per worker URL from the instances that report them, in {@link #all()} order: a worker two
     * instances route to shows the first one's rate. Empty when no instance reports any.
     */
    public Map<String, Double> kvCacheHitRates() {
        Map<String, Double> rates = new HashMap<>();
        for (LoadBalancingPolicy p : all()) {
            p.kvCacheHitRates().forEach(rates::putIfAbsent);
        }
        return rates;
    }

    /** Drops up to {@code maxPerPolicy} expired sessions from each instance; returns the total. */
    public int expireIdleSessions(int maxPerPolicy) {
        int n = 0;
        for (LoadBalancingPolicy p : all()) {
            n += p.expireIdle(maxPerPolicy);
        }
        return n;
    }

    public SessionStore sessionStore() {
        return sessionStore;
    }

    /** Every instance: default, per-model, prefill, decode. */
    public List<LoadBalancingPolicy> all() {
        List<LoadBalancingPolicy> all = new ArrayList<>(3 + byModel.size());
        all.add(defaultPolicy);
        all.addAll(byModel.values());
        all.add(prefillPolicy);
        all.add(decodePolicy);
        return all;
    }

    /** Stops background work (cache eviction) of every instance, then closes the session store. */
    @Override
    public void close() {
        for (LoadBalancingPolicy p : all()) {
            p.close();
        }
        sessionStore.close();
    }
}
