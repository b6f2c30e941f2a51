package org.vllmrouter.core.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionStore;
import org.vllmrouter.core.session.SessionStores;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.core.worker.WorkerRole;

class PolicyRegistryTest {
    private static final PolicySettings DEFAULTS = PolicySettings.from(RouterConfig.defaults());

    /** A registry of the policies {@code json} configures, sessions in memory. */
    private static PolicyRegistry registry(String json) throws Exception {
        return new PolicyRegistry(PolicySettings.from(RouterConfig.fromJson(json)), memoryStore());
    }

    private static SessionStore memoryStore() {
        return SessionStores.memory(Duration.ofSeconds(StickyLeastLoadedPolicy.DEFAULT_TTL_SECONDS),
                RouterConfig.defaults().maxSessions());
    }

    private static SessionTable memoryTable() {
        return memoryStore().table("");
    }

    /** Accepted with any policy (0.1.17 does), but said at start when no kv_aware policy will read it. */
    @Test
    void anAffinityTtlWithoutAKvAwarePolicyIsWarnedAboutAtStart() throws Exception {
        assertEquals(1, warningsOnStart("{\"policy\": \"sticky_least_loaded\", \"kv_aware_session_affinity_ttl_secs\": 60}")
                .stream().filter(m -> m.startsWith("--kv-aware-session-affinity-ttl-secs applies to the kv_aware policy only"))
                .count());
        assertTrue(warningsOnStart("{\"policy\": \"kv_aware\", \"kv_aware_session_affinity_ttl_secs\": 60}").isEmpty());
        assertTrue(warningsOnStart("{\"policy\": \"sticky_least_loaded\"}").isEmpty());
    }

    private static List<String> warningsOnStart(String json) throws Exception {
        Logger log = Logger.getLogger(PolicyRegistry.class.getName());
        List<String> warnings = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(capture);
        try (PolicyRegistry ignored = registry(json)) {
            return warnings;
        } finally {
            log.removeHandler(capture);
        }
    }

    @Test
    void prefillAndDecodeAreNewInstancesOfTheInheritedPolicy() throws Exception {
        try (PolicyRegistry reg = registry("{\"policy\": \"sticky_least_loaded\"}")) {
            assertInstanceOf(StickyLeastLoadedPolicy.class, reg.prefillPolicy());
            assertInstanceOf(StickyLeastLoadedPolicy.class, reg.decodePolicy());
            assertNotSame(reg.prefillPolicy(), reg.decodePolicy());
            assertNotSame(reg.defaultPolicy(), reg.prefillPolicy());
            assertNotSame(reg.defaultPolicy(), reg.decodePolicy());
        }
    }

    /** Each sticky instance names its own scope in the store, so replicas sharing a store keep roles and models apart. */
    @Test
    void stickyInstancesTakeTheirTablesFromTheStoreUnderOwnScopesAndCloseIt() throws Exception {
        List<String> scopes = new ArrayList<>();
        boolean[] closed = {false};
        SessionStore memory = SessionStores.memory(Duration.ofHours(1), 1_000_000);
        SessionStore recording = new SessionStore() {
            @Override
            public SessionTable table(String scope) {
                scopes.add(scope);
                return memory.table(scope);
            }

            @Override
            public String description() {
                return "recording";
            }

            @Override
            public boolean degraded() {
                return false;
            }

            @Override
            public void close() {
                closed[0] = true;
            }
        };
        RouterConfig cfg = RouterConfig.fromJson("{\"policy\": \"sticky_least_loaded\", \"decode_policy\": \"random\"}");
        try (PolicyRegistry reg = new PolicyRegistry(PolicySettings.from(cfg), recording)) {
            reg.setModelPolicy("llama", PolicyNames.STICKY_LEAST_LOADED);
            reg.setModelPolicy("other", PolicyNames.ROUND_ROBIN);
            assertEquals(List.of("default", "prefill", "model:llama"), scopes);
            assertSame(recording, reg.sessionStore());
        }
        assertTrue(closed[0], "the registry closes its store");
    }

    @Test
    void explicitRolePoliciesWin() throws Exception {
        try (PolicyRegistry reg = registry(
                "{\"policy\": \"random\", \"prefill_policy\": \"round_robin\", \"decode_policy\": \"power_of_two\"}")) {
            assertEquals(PolicyNames.RANDOM, reg.defaultPolicy().name());
            assertEquals(PolicyNames.ROUND_ROBIN, reg.prefillPolicy().name());
            assertEquals(PolicyNames.POWER_OF_TWO, reg.decodePolicy().name());
        }
    }

    @Test
    void perModelPoliciesAndFallbackToDefault() throws Exception {
        try (PolicyRegistry reg = registry("{\"policy\": \"round_robin\"}")) {
            LoadBalancingPolicy m = reg.setModelPolicy("m", PolicyNames.STICKY_LEAST_LOADED);
            assertSame(m, reg.setModelPolicy("m", PolicyNames.RANDOM), "first setting wins");
            assertSame(m, reg.policyFor("m"));
            assertSame(reg.defaultPolicy(), reg.policyFor("other"));
            assertSame(reg.defaultPolicy(), reg.policyFor(null));
            reg.removeModelPolicy("m");
            assertSame(reg.defaultPolicy(), reg.policyFor("m"));
        }
    }

    @Test
    void finishSessionFansOutToEveryInstanceAndStatsSumThem() throws Exception {
        try (PolicyRegistry reg = registry("{\"policy\": \"sticky_least_loaded\"}")) {
            List<Worker> prefill = List.of(Worker.builder("http://p0:1").role(WorkerRole.PREFILL).build(),
                    Worker.builder("http://p1:1").role(WorkerRole.PREFILL).build());
            List<Worker> decode = List.of(Worker.builder("http://d0:1").role(WorkerRole.DECODE).build(),
                    Worker.builder("http://d1:1").role(WorkerRole.DECODE).build());
            List<Worker> regular = List.of(Worker.builder("http://r0:1").build());
            LoadBalancingPolicy perModel = reg.setModelPolicy("m", PolicyNames.STICKY_LEAST_LOADED);
            for (int i = 0; i < 4; i++) {
                RoutingRequest r = RoutingRequest.of("s" + i, null, "");
                reg.prefillPolicy().select(prefill, r);
                reg.decodePolicy().select(decode, r);
            }
            reg.defaultPolicy().select(regular, RoutingRequest.of("s0", null, ""));
            perModel.select(regular, RoutingRequest.of("s0", "m", ""));
            SessionStats s = reg.sessionStats();
            assertEquals(10, s.activeSessions());
            assertEquals(2, s.activeByWorker().get("http://p0:1"));
            assertEquals(2, s.activeByWorker().get("http://d1:1"));
            assertEquals(2, s.activeByWorker().get("http://r0:1"));
            reg.finishSession("s0");
            SessionStats after = reg.sessionStats();
            assertEquals(6, after.activeSessions());
            assertEquals(4, after.released());
            assertTrue(!after.activeByWorker().containsKey("http://r0:1"));
            for (int i = 1; i < 4; i++) {
                reg.finishSession("s" + i);
            }
            assertEquals(0, reg.sessionStats().activeSessions());
        }
    }

    @Test
    void aRegistryMixingPoliciesCountsAndSweepsOnlyTheSessionsOfThoseThatKeepThem() throws Exception {
        try (PolicyRegistry reg = registry("{\"policy\": \"cache_aware\"}")) {
            List<Worker> regular = List.of(Worker.builder("http://r0:1").build(), Worker.builder("http://r1:1").build());
            LoadBalancingPolicy sticky = reg.setModelPolicy("m", PolicyNames.STICKY_LEAST_LOADED);
            reg.defaultPolicy().select(regular, RoutingRequest.of("s0", null, "a prompt"));
            Worker bound = sticky.select(regular, RoutingRequest.of("s0", "m", "a prompt"));
            SessionStats s = reg.sessionStats();
            assertEquals(1, s.activeSessions());
            assertEquals(java.util.Map.of(bound.url(), 1), s.activeByWorker());
            assertEquals(0, reg.expireIdleSessions(100), "nothing is idle past the TTL yet");
            reg.removeModelPolicy("m");
            assertEquals(SessionStats.EMPTY, reg.sessionStats(), "a removed model's sessions go with its policy");
        }
    }

    /** PD: each role pins and balances sessions independently, whatever the prompt of each turn. */
    @Test
    void pdSessionsStickToTheirPairAcrossTurnsAndBalanceOnBothRoles() throws Exception {
        try (PolicyRegistry reg = registry("{\"policy\": \"sticky_least_loaded\"}")) {
            List<Worker> prefill = List.of(Worker.builder("http://p0:1").role(WorkerRole.PREFILL).build(),
                    Worker.builder("http://p1:1").role(WorkerRole.PREFILL).build());
            List<Worker> decode = List.of(Worker.builder("http://d0:1").role(WorkerRole.DECODE).build(),
                    Worker.builder("http://d1:1").role(WorkerRole.DECODE).build());
            Worker[][] pairs = new Worker[4][];
            for (int turn = 0; turn < 3; turn++) {
                for (int s = 0; s < 4; s++) {
                    RoutingRequest r = RoutingRequest.of("traj-" + s, null, "{\"prompt\": \"turn " + turn + " of " + s + "\"}");
                    Worker[] pair = {reg.prefillPolicy().select(prefill, r), reg.decodePolicy().select(decode, r)};
                    if (turn == 0) {
                        pairs[s] = pair;
                    } else {
                        assertSame(pairs[s][0], pair[0], "prefill of traj-" + s + " turn " + turn);
                        assertSame(pairs[s][1], pair[1], "decode of traj-" + s + " turn " + turn);
                    }
                }
            }
            SessionStats s = reg.sessionStats();
            for (String url : List.of("http://p0:1", "http://p1:1", "http://d0:1", "http://d1:1")) {
                assertEquals(2, s.activeByWorker().get(url), url);
            }
            reg.prefillPolicy().select(prefill, RoutingRequest.of(null, null, "{\"prompt\": \"no session\"}"));
            assertEquals(8, reg.sessionStats().activeSessions(), "requests without a session are not tracked");
            for (int i = 0; i < 4; i++) {
                reg.finishSession("traj-" + i);
            }
            assertEquals(0, reg.sessionStats().activeSessions());
        }
    }

    @Test
    void everyContractPolicyHasAnImplementationAndEveryImplementationAContractName() {
        assertEquals(Set.copyOf(PolicyNames.ALL), Policies.implemented());
        for (String name : Policies.implemented()) {
            LoadBalancingPolicy policy = Policies.create(name, DEFAULTS, PolicyRegistryTest::memoryTable);
            assertEquals(name, policy.name());
            if (policy instanceof CacheAwarePolicy cacheAware) {
                cacheAware.close();
            }
        }
    }

    @Test
    void everyPolicyNameBuilds() throws Exception {
        for (String name : PolicyNames.ALL) {
            try (PolicyRegistry reg = registry("{\"policy\": \"" + name + "\"}")) {
                assertEquals(name, reg.defaultPolicy().name());
            }
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Policies.create("nope", DEFAULTS, PolicyRegistryTest::memoryTable));
        assertTrue(e.getMessage().contains("Unknown policy 'nope'"));
    }
}
