package org.vllmrouter.core.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.HeaderLookup;
import org.vllmrouter.core.worker.Worker;

class KvAwarePolicyTest {
    private static final KvAwarePolicy.Settings DEFAULTS = new KvAwarePolicy.Settings(0.0, 0.8, 0.6, 0.3);
    private final List<Worker> workers = List.of(Worker.builder("http://a:1").build(),
            Worker.builder("http://b:1").build(), Worker.builder("http://c:1").build());

    /** A residency with {@code input} tokens and the given credit per worker; records each decision. */
    private static final class Known implements PrefixResidency {
        final int input;
        final Map<String, Integer> credit = new HashMap<>();
        final Map<String, Integer> held = new HashMap<>();
        final List<String> outcomes = new ArrayList<>();

        Known(int input) {
            this.input = input;
        }

        @Override
        public int inputTokens() {
            return input;
        }

        @Override
        public int creditedTokens(Worker worker) {
            return credit.getOrDefault(worker.url(), 0);
        }

        @Override
        public int heldBlocks(Worker worker) {
            return held.getOrDefault(worker.url(), 0);
        }

        @Override
        public void decided(Worker worker, String outcome) {
            outcomes.add(outcome);
        }
    }

    private Worker select(KvAwarePolicy policy, PrefixResidency prefix) {
        return policy.select(workers, RoutingRequest.of(null, null, "").withPrefix(prefix));
    }

    @Test
    void theHolderOfTheLongestPrefixWins() {
        KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
        Known held = new Known(100);
        held.credit.put("http://c:1", 96);
        held.credit.put("http://b:1", 32);
        held.held.put("http://c:1", 500);
        assertEquals("http://c:1", select(policy, held).url(), "however full its cache");
        assertEquals(List.of("prefix_cost"), held.outcomes);
    }

    @Test
    void aPromptNobodyHoldsGoesToTheIdleWorkerWhoseCacheHoldsTheFewestBlocks() {
        KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
        Known none = new Known(100);
        none.held.put("http://a:1", 50);
        none.held.put("http://b:1", 30);
        none.held.put("http://c:1", 10);
        assertEquals("http://c:1", select(policy, none).url());
        workers.get(2).incrementLoad();
        assertEquals("http://b:1", select(policy, none).url(), "the emptier cache only among the least loaded");
    }

    @Test
    void newSessionsPlacedOneAtATimeOnEmptyWorkersSpreadOverThem() {
        for (boolean eventsArrive : new boolean[] {true, false}) {
            KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
            Map<String, Integer> holds = new HashMap<>();
            Map<String, Integer> sessions = new HashMap<>();
            for (int session = 0; session < 9; session++) {
                Known fresh = new Known(300);
                fresh.held.putAll(holds);
                RoutingRequest request = RoutingRequest.of(null, null, "").withPrefix(fresh);
                Worker chosen = policy.select(workers, request);
                // One at a time: each is answered before the next arrives.
                policy.answerStarted(chosen, request);
                sessions.merge(chosen.url(), 1, Integer::sum);
                if (eventsArrive) {
                    holds.merge(chosen.url(), 3, Integer::sum);
                }
            }
            assertEquals(Map.of("http://a:1", 3, "http://b:1", 3, "http://c:1", 3), sessions,
                    eventsArrive ? "by the blocks each holds" : "in turn while the caches look alike");
        }
    }

    /**
     * Every case but a prompt nobody holds is chosen by 0.1.17's cost, (input - credit + queued) x (in flight + 1): the
     * cheapest, the first in registry order on a tie, whatever the caches hold in all.
     */
    @Test
    void whereAnyWorkerHoldsPartOfThePromptTheChoiceIsTheCheapestFirstInRegistryOrder() {
        Random random = new Random(54);
        for (int trial = 0; trial < 2000; trial++) {
            // A fresh policy: nothing queued, the requests in flight have all begun to answer.
            KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
            workers.forEach(w -> {
                while (w.load() > 0) {
                    w.decrementLoad();
                }
            });
            Known prefix = new Known(16 * (1 + random.nextInt(40)));
            int[] loads = new int[workers.size()];
            for (int i = 0; i < workers.size(); i++) {
                Worker w = workers.get(i);
                loads[i] = random.nextInt(3);
                for (int l = 0; l < loads[i]; l++) {
                    w.incrementLoad();
                }
                prefix.held.put(w.url(), random.nextInt(200));
                if (random.nextBoolean()) {
                    prefix.credit.put(w.url(), 16 * random.nextInt(prefix.input / 16));
                }
            }
            if (prefix.credit.values().stream().allMatch(c -> c == 0)) {
                prefix.credit.put(workers.get(random.nextInt(workers.size())).url(), 16);
            }
            int expected = 0;
            double best = Double.MAX_VALUE;
            for (int i = 0; i < workers.size(); i++) {
                double cost = (prefix.input - prefix.creditedTokens(workers.get(i))) * (loads[i] + 1.0);
                if (cost < best) {
                    best = cost;
                    expected = i;
                }
            }
            assertEquals(workers.get(expected).url(), select(policy, prefix).url(), "trial " + trial);
        }
    }

    @Test
    void inFlightRequestsOutweighAShortPrefix() {
        KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
        Worker busy = workers.get(2);
        busy.incrementLoad();
        busy.incrementLoad();
        Known small = new Known(100);
        small.credit.put(busy.url(), 16);
        assertEquals("http://a:1", select(policy, small).url(), "a batch of three computing 84 tokens costs more than 100");
        Known large = new Known(1000);
        large.credit.put(busy.url(), 992);
        assertEquals(busy.url(), select(policy, large).url());
    }

    /**
     * 0.1.17's threshold: a prompt of N full blocks (16 tokens) and t more tokens, the holder of its N blocks with K
     * requests in flight (all answering) beside idle workers. The holder computes t tokens in a batch of K + 1, an idle
     * worker all 16N + t in a batch of 1: the holder keeps the prompt while t(K + 1) < 16N + t, the first worker in
     * registry order (idle) takes it on a tie.
     */
    @Test
    void theHolderOfAPrefixKeepsItWhileItsBatchTimesTheTokensLeftIsBelowThePrompt() {
        Worker holder = workers.get(1);
        for (int blocks = 1; blocks <= 25; blocks += 3) {
            for (int tail : new int[] {1, 4, 16, 60, 200}) {
                for (int inFlight = 0; inFlight <= 40; inFlight++) {
                    KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
                    holder.resetLoad();
                    for (int l = 0; l < inFlight; l++) {
                        holder.incrementLoad();
                    }
                    Known prompt = new Known(16 * blocks + tail);
                    prompt.credit.put(holder.url(), 16 * blocks);
                    boolean keeps = (long) tail * (inFlight + 1) < 16L * blocks + tail;
                    assertEquals(keeps ? holder.url() : "http://a:1", select(policy, prompt).url(),
                            blocks + " blocks + " + tail + " tokens, " + inFlight + " in flight");
                }
            }
        }
    }

    /** The cases measured against 0.1.17 with mock workers (docs/perf/kv-aware.md), where the old cost left. */
    @Test
    void aRepeatedPromptStaysOnItsHolderUnderTheLoadsWhere0117KeptIt() {
        KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
        Worker holder = workers.get(1);
        for (int l = 0; l < 16; l++) {
            holder.incrementLoad();
        }
        Known twoBlocks = new Known(33);
        twoBlocks.credit.put(holder.url(), 32);
        assertEquals(holder.url(), select(policy, twoBlocks).url(), "2 blocks, 16 in flight");
        holder.resetLoad();
        for (int l = 0; l < 8; l++) {
            holder.incrementLoad();
        }
        Known turn = new Known(400);
        turn.credit.put(holder.url(), 384);
        assertEquals(holder.url(), select(policy, turn).url(), "about 400 tokens, 8 in flight");
    }

    /** Placed tokens count on their worker until it begins to answer: a worker still computing prompts is busier. */
    @Test
    void promptsNotYetAnsweredWeighOnTheirWorkerUntilItAnswers() {
        KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
        Worker a = workers.get(0);
        RoutingRequest first = RoutingRequest.of(null, null, "").withPrefix(new Known(300));
        assertEquals(a.url(), policy.select(workers, first).url());
        a.incrementLoad();
        assertEquals(300, policy.queuedTokens(a));
        Known cached = new Known(100);
        cached.credit.put(a.url(), 96);
        assertEquals("http://b:1", select(policy, cached).url(), "(4 + 300) x 2 > 100");
        policy.answerStarted(a, first);
        policy.answerStarted(a, first);
        assertEquals(0, policy.queuedTokens(a), "released once");
        assertEquals(a.url(), select(policy, cached).url(), "4 x 2 < 100");
    }

    @Test
    void aRetryPlacingTheSameRequestAgainEndsItsEarlierWait() {
        KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
        RoutingRequest request = RoutingRequest.of(null, null, "").withPrefix(new Known(300));
        Worker first = policy.select(workers, request);
        Worker second = policy.select(workers.stream().filter(w -> w != first).toList(), request);
        assertEquals(0, policy.queuedTokens(first));
        assertEquals(300, policy.queuedTokens(second));
    }

    @Test
    void withoutTokensTheChoiceIsOnLoadAlone() {
        KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
        workers.get(0).incrementLoad();
        Known missing = new Known(0);
        assertEquals("http://b:1", select(policy, missing).url());
        assertEquals(List.of("missing_tokens"), missing.outcomes);
        assertEquals("http://b:1", select(policy, PrefixResidency.UNKNOWN).url());
    }

    @Test
    void aPositiveTemperatureSamplesEveryWorkerWithTheCheapestMostOften() {
        // T in the cost's units, as 0.1.17 has it: a cost 64 above the cheapest is drawn e^-1 times as often.
        KvAwarePolicy policy = new KvAwarePolicy(new KvAwarePolicy.Settings(64.0, 0.8, 0.6, 0.3));
        Map<String, Integer> counts = new HashMap<>();
        for (int i = 0; i < 3000; i++) {
            Known prefix = new Known(100);
            prefix.credit.put("http://b:1", 64);
            RoutingRequest request = RoutingRequest.of(null, null, "").withPrefix(prefix);
            Worker chosen = policy.select(workers, request);
            policy.answerStarted(chosen, request);
            counts.merge(chosen.url(), 1, Integer::sum);
        }
        assertEquals(3, counts.size(), counts.toString());
        assertTrue(counts.get("http://b:1") > counts.get("http://a:1") && counts.get("http://b:1") > counts.get("http://c:1"),
                counts.toString());
    }

    /** A request of a session named by {@code header} (or by nothing when null), with a body text. */
    private static RoutingRequest turn(String header, String id, String body, PrefixResidency prefix) {
        HeaderLookup headers = header == null ? HeaderLookup.NONE : HeaderLookup.of(Map.of(header, id));
        return RoutingRequest.of(Extraction.NONE, headers, () -> body, body.length()).withPrefix(prefix);
    }

    private static Known heldBy(String url) {
        Known held = new Known(100);
        held.credit.put(url, 96);
        return held;
    }

    @Test
    void aSessionStaysOnItsWorkerWithinTheIdleTtlAndFollowsResidencyAfterIt() {
        AtomicLong nanos = new AtomicLong();
        KvAwarePolicy policy = new KvAwarePolicy(new KvAwarePolicy.Settings(0.0, 0.8, 0.6, 0.3,
                Duration.ofSeconds(10)), nanos::get);
        assertEquals("http://b:1", policy.select(workers, turn("X-Session-ID", "s1", "", heldBy("http://b:1"))).url());
        nanos.addAndGet(Duration.ofSeconds(9).toNanos());
        Known elsewhere = heldBy("http://c:1");
        assertEquals("http://b:1", policy.select(workers, turn("X-Session-ID", "s1", "", elsewhere)).url());
        assertEquals(List.of("sticky_hit"), elsewhere.outcomes);
        // Idle time: the turn above renewed the binding, 9 s more keep it.
        nanos.addAndGet(Duration.ofSeconds(9).toNanos());
        assertEquals("http://b:1", policy.select(workers, turn("X-Session-ID", "s1", "", heldBy("http://c:1"))).url());
        nanos.addAndGet(Duration.ofSeconds(11).toNanos());
        Known after = heldBy("http://c:1");
        assertEquals("http://c:1", policy.select(workers, turn("X-Session-ID", "s1", "", after)).url());
        assertEquals(List.of("prefix_cost"), after.outcomes);
    }

    @Test
    void theSessionIdentityComesFromUpstreamsHeadersAndAgenticContextOnly() {
        for (String header : List.of("x-session-id", "Session-Id", "thread-id", "x-claude-code-session-id")) {
            assertEquals("id-1", KvAwarePolicy.sessionIdentity(turn(header, "id-1", "{}", PrefixResidency.UNKNOWN)), header);
        }
        assertEquals("agent-7", KvAwarePolicy.sessionIdentity(turn(null, null,
                "{\"prompt\":\"x\",\"vllm_xargs\":{\"agentic_context\":{\"session_id\":\"agent-7\"}}}",
                PrefixResidency.UNKNOWN)));
        for (String header : List.of("x-user-id", "x-request-id", "x-correlation-id", "x-tenant-id")) {
            assertEquals(null, KvAwarePolicy.sessionIdentity(turn(header, "id-1", "{}", PrefixResidency.UNKNOWN)), header);
        }
        assertEquals(null, KvAwarePolicy.sessionIdentity(turn(null, null, "{\"user\":\"u1\"}", PrefixResidency.UNKNOWN)));
    }

    @Test
    void withoutTheTtlSessionsAreNotBound() {
        KvAwarePolicy policy = new KvAwarePolicy(DEFAULTS);
        assertEquals("http://b:1", policy.select(workers, turn("X-Session-ID", "s1", "", heldBy("http://b:1"))).url());
        assertEquals("http://c:1", policy.select(workers, turn("X-Session-ID", "s1", "", heldBy("http://c:1"))).url());
    }

    @Test
    void aBoundWorkerThatIsNoLongerACandidateGivesWayToResidency() {
        KvAwarePolicy policy = new KvAwarePolicy(new KvAwarePolicy.Settings(0.0, 0.8, 0.6, 0.3, Duration.ofMinutes(1)));
        assertEquals("http://b:1", policy.select(workers, turn("X-Session-ID", "s1", "", heldBy("http://b:1"))).url());
        List<Worker> withoutB = List.of(workers.get(0), workers.get(2));
        assertEquals("http://c:1", policy.select(withoutB, turn("X-Session-ID", "s1", "", heldBy("http://c:1"))).url());
        assertEquals("http://c:1", policy.select(workers, turn("X-Session-ID", "s1", "", heldBy("http://b:1"))).url(),
                "rebound to the worker it went to");
    }
}
