package org.vllmrouter.core.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.session.InMemorySessionTable;
import org.vllmrouter.core.session.LeastLoaded;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.worker.Worker;

/** sticky_balanced: placement by projected tokens, groups within the margin, and sticky_least_loaded's contract. */
class StickyBalancedPolicyTest {
    private final AtomicLong clock = new AtomicLong();
    private final InMemorySessionTable table = new InMemorySessionTable(Duration.ofSeconds(60), clock::get);
    private final Worker a = Worker.builder("http://a:8000").build();
    private final Worker b = Worker.builder("http://b:8000").build();
    private final Worker c = Worker.builder("http://c:8000").build();
    private final List<Worker> workers = List.of(a, b, c);

    private StickyBalancedPolicy policy(double margin, String separator) {
        return new StickyBalancedPolicy(table, new StickyBalancedPolicy.Settings(margin, separator, 0, 0.5, Duration.ZERO, false));
    }

    /** A turn of {@code id} whose body is {@code tokens} prompt tokens by the router's estimate. */
    private static RoutingRequest turn(String id, int tokens) {
        return RoutingRequest.of(id, null, "x".repeat(tokens * RoutingRequest.BODY_BYTES_PER_TOKEN));
    }

    /** Sends a turn and lets it finish, as the proxy does around a call. */
    private static Worker complete(StickyBalancedPolicy p, List<Worker> candidates, String id, int tokens) {
        Worker w = p.select(candidates, turn(id, tokens));
        p.onComplete(w, true);
        return w;
    }

    @Test
    void aNewSessionGoesToTheFewestTokensNotTheFewestSessions() {
        StickyBalancedPolicy p = policy(0, "");
        Worker big = complete(p, List.of(a), "long", 10_000);
        complete(p, List.of(b), "short-1", 100);
        complete(p, List.of(b), "short-2", 100);
        complete(p, List.of(c), "short-3", 100);
        complete(p, List.of(c), "short-4", 100);
        assertSame(a, big);
        Worker chosen = p.select(workers, turn("new", 100));
        assertTrue(chosen == b || chosen == c, "not the worker holding 10k tokens: " + chosen.url());
    }

    @Test
    void aSessionStaysOnItsWorkerAndItsFootprintFollowsItsLastPrompt() {
        StickyBalancedPolicy p = policy(0, "");
        Worker home = complete(p, workers, "grows", 100);
        assertSame(home, complete(p, workers, "grows", 50_000));
        assertEquals(50_000L, table.boundTokens().get(home.url()));
        assertSame(home, complete(p, workers, "grows", 60_000), "a known session is never moved by load");
        assertEquals(60_000L, table.boundTokens().get(home.url()));
        Worker other = complete(p, workers, "fresh", 10);
        assertTrue(other != home);
    }

    @Test
    void inFlightPromptsCountUntilTheirCallsEnd() {
        StickyBalancedPolicy p = policy(0, "");
        List<Worker> two = List.of(a, b);
        complete(p, List.of(a), "on-a", 1_000);
        complete(p, List.of(b), "on-b", 1_000);
        Worker busy = p.select(List.of(a), turn("on-a", 1_000));
        assertSame(a, busy);
        assertSame(b, p.select(two, turn("new-1", 10)), "a's prompt in flight makes it the heavier");
        p.onComplete(b, true);
        p.onComplete(a, true);
        table.release("new-1");
        Worker next = p.select(two, turn("new-2", 10));
        assertTrue(next == a || next == b);
        assertEquals(LeastLoaded.tieBreak(two, "new-2"), next, "with nothing in flight, the tie-break decides");
    }

    @Test
    void aWorkerWhoseEngineQueuesIsProjectedHeavier() {
        StickyBalancedPolicy p = policy(0, "");
        List<Worker> two = List.of(a, b);
        complete(p, List.of(a), "on-a", 1_000);
        complete(p, List.of(b), "on-b", 1_200);
        assertSame(a, p.select(two, turn("before", 10)), "by tokens alone a is the lighter");
        p.onComplete(a, true);
        table.release("before");
        p.readLiveLoad(url -> url.equals(a.baseUrl()) ? new LiveLoad.Sample(4, 8, 0.9) : null);
        assertSame(b, p.select(two, turn("after", 10)), "a's queue, half its batch, makes it 1,500");
    }

    @Test
    void aGroupJoinsItsWorkerWithinTheMarginAndLeavesItBeyond() {
        StickyBalancedPolicy p = policy(2, "_");
        Worker first = complete(p, workers, "task7_0", 1_000);
        // 1,000 tokens above the others: within 2 x 1,000.
        assertSame(first, complete(p, workers, "task7_1", 1_000));
        // 2,000 above: still within.
        assertSame(first, complete(p, workers, "task7_2", 1_000));
        // 3,000 above: beyond, so the least loaded, which the group then follows.
        Worker second = complete(p, workers, "task7_3", 1_000);
        assertTrue(second != first);
        assertSame(second, complete(p, workers, "task7_4", 1_000));
        Worker unrelated = complete(p, workers, "other_0", 1_000);
        assertTrue(unrelated != first && unrelated != second, "another group starts on the least loaded");
    }

    @Test
    void marginZeroAndNoSeparatorPlaceByLoadAlone() {
        StickyBalancedPolicy zero = policy(0, "_");
        Worker first = complete(zero, workers, "g_0", 1_000);
        assertTrue(complete(zero, workers, "g_1", 1_000) != first);
        table.release("g_0");
        table.release("g_1");
        StickyBalancedPolicy noGroups = policy(100, "");
        Worker again = complete(noGroups, workers, "h_0", 1_000);
        assertTrue(complete(noGroups, workers, "h_1", 1_000) != again);
    }

    @Test
    void theFlagsReachThePolicy() throws Exception {
        PolicySettings settings = PolicySettings.from(RouterConfig.fromJson("{\"worker_urls\": [\"http://a:1\"], "
                + "\"policy\": \"sticky_balanced\", \"sticky_balanced_group_margin\": 0.5, "
                + "\"sticky_balanced_group_separator\": \"::\", \"sticky_balanced_move_margin\": 3, "
                + "\"sticky_balanced_move_kv_usage\": 0.25, \"sticky_balanced_tool_hold_secs\": 1.5, "
                + "\"sticky_balanced_group_by_kv\": true}"));
        assertEquals(3.0, settings.stickyBalanced().moveMargin());
        assertEquals(0.25, settings.stickyBalanced().moveKvUsage());
        assertEquals(Duration.ofMillis(1_500), settings.stickyBalanced().toolHold());
        assertTrue(Policies.create(PolicyNames.STICKY_BALANCED, settings, () -> table).usesPrefixResidency(),
                "grouping by KV asks the route for the prompt's residency");
        settings = settings.withStickyBalanced(new StickyBalancedPolicy.Settings(0.5, "::", 3, 0.25, Duration.ZERO,
                false));
        LoadBalancingPolicy p = Policies.create(PolicyNames.STICKY_BALANCED, settings, () -> table);
        Worker first = p.select(workers, turn("run::0", 1_000));
        p.onComplete(first, true);
        assertSame(first, p.select(workers, turn("run::1", 2_000)), "1,000 above the least: within 0.5 x 2,000");
        assertTrue(p.select(workers, turn("run_2", 2_000)) != first, "'_' separates nothing here");
    }

    @Test
    void aBoundSessionMovesOnlyWhenTheImbalanceOutweighsItsReprefill() {
        StickyBalancedPolicy p = new StickyBalancedPolicy(table, new StickyBalancedPolicy.Settings(0, "", 2.0, 0.5, Duration.ZERO, false));
        p.readLiveLoad(CONTENDED);
        List<Worker> two = List.of(a, b);
        for (String id : new String[] {"big-1", "big-2", "big-3", "small"}) {
            assertSame(a, complete(p, List.of(a), id, id.equals("small") ? 1_000 : 10_000));
        }
        assertSame(b, complete(p, List.of(b), "other", 1_000));
        assertSame(a, complete(p, two, "big-1", 10_000), "20,000 above the least: not more than 2 x 10,000");
        assertEquals(0, table.stats().rebound());
        assertSame(b, complete(p, two, "small", 1_000), "29,000 above the least: more than 2 x 1,000");
        assertEquals(1, table.stats().rebound());
        assertEquals(1, p.trajectory("small").workerChanges());
        assertEquals(List.of(b.url()), p.trajectory("small").workers());
        assertEquals(2_000L, table.boundTokens().get(b.url()));
        assertEquals(30_000L, table.boundTokens().get(a.url()));
        assertSame(b, complete(p, two, "small", 1_000), "a moved session stays on its new worker");

        StickyBalancedPolicy still = policy(0, "");
        still.readLiveLoad(CONTENDED);
        assertSame(a, complete(still, two, "big-2", 10), "move margin 0: never moves");
    }

    /** Every worker's engine queues nothing but holds 60% of its KV cache in running requests. */
    private static final LiveLoad CONTENDED = url -> new LiveLoad.Sample(0, 4, 0.6);

    @Test
    void aSessionMovesOnlyOffAWorkerWhoseCacheIsContended() {
        StickyBalancedPolicy p = new StickyBalancedPolicy(table, new StickyBalancedPolicy.Settings(0, "", 2.0, 0.7, Duration.ZERO, false));
        List<Worker> two = List.of(a, b);
        complete(p, List.of(a), "big", 30_000);
        assertSame(a, complete(p, List.of(a), "small", 1_000));
        assertSame(a, complete(p, two, "small", 1_000), "no sample: nothing says the cache is contended");
        p.readLiveLoad(CONTENDED);
        assertSame(a, complete(p, two, "small", 1_000), "60% in use, below 70%");
        p.readLiveLoad(url -> url.equals(a.baseUrl()) ? new LiveLoad.Sample(0, 4, 0.8) : null);
        assertSame(b, complete(p, two, "small", 1_000), "80% in use");
        assertEquals(1, table.stats().rebound());
    }

    @Test
    void aQueueOnAWorkerWithItsCacheFreeMovesNothing() {
        StickyBalancedPolicy p = new StickyBalancedPolicy(table, new StickyBalancedPolicy.Settings(0, "", 2.0, 0.5, Duration.ZERO, false));
        List<Worker> two = List.of(a, b);
        complete(p, List.of(a), "big", 30_000);
        assertSame(a, complete(p, List.of(a), "small", 1_000));
        p.readLiveLoad(url -> url.equals(a.baseUrl()) ? new LiveLoad.Sample(8, 4, 0.1) : null);
        assertSame(a, complete(p, two, "small", 1_000), "a burst queued at 10% in use: the context stays cached");
        assertEquals(0, table.stats().rebound());
        assertEquals(0, p.trajectory("small").workerChanges());
    }

    private StickyBalancedPolicy holding(Duration hold) {
        return new StickyBalancedPolicy(table, new StickyBalancedPolicy.Settings(0, "", 0, 0.5, hold, false));
    }

    /** A turn of {@code id} on {@code w} that ends, its usage heard, as the proxy reports it. */
    private static void endedTurn(StickyBalancedPolicy p, Worker w, String id, int tokens) {
        RoutingRequest r = turn(id, tokens);
        assertSame(w, p.select(List.of(w), r));
        p.onComplete(w, true);
        p.turnEnded(r, tokens, 0);
    }

    /** Where a new 10-token session would go among a and b (placed, then finished). */
    private Worker probe(StickyBalancedPolicy p) {
        Worker w = p.select(List.of(a, b), turn("probe", 10));
        p.onComplete(w, true);
        p.finishSession("probe");
        return w;
    }

    @Test
    void aWorkerHeldForASessionBetweenTurnsIsNotChosenWhileAnotherIsFree() {
        StickyBalancedPolicy p = holding(Duration.ofSeconds(3));
        endedTurn(p, b, "t", 1_500);
        clock.addAndGet(Duration.ofSeconds(4).toNanos());
        endedTurn(p, a, "s", 1_000);
        assertSame(b, probe(p), "a: 1,000 bound and 1,000 held against b's 1,500");
        clock.addAndGet(Duration.ofSeconds(2).toNanos());
        assertSame(b, probe(p), "still held two seconds later");

        StickyBalancedPolicy off = holding(Duration.ZERO);
        table.release("s");
        table.release("t");
        endedTurn(off, b, "t", 1_500);
        endedTurn(off, a, "s", 1_000);
        assertSame(a, probe(off), "no hold: a's 1,000 against b's 1,500");
    }

    @Test
    void theHoldEndsWhenItExpires() {
        StickyBalancedPolicy p = holding(Duration.ofSeconds(3));
        endedTurn(p, b, "t", 1_500);
        clock.addAndGet(Duration.ofSeconds(4).toNanos());
        endedTurn(p, a, "s", 1_000);
        assertSame(b, probe(p));
        clock.addAndGet(Duration.ofSeconds(3).toNanos());
        assertSame(a, probe(p), "the hold expired: a's 1,000 against b's 1,500");
    }

    @Test
    void theHoldEndsWithTheSessionsNextTurn() {
        StickyBalancedPolicy p = holding(Duration.ofSeconds(3));
        endedTurn(p, b, "t", 1_500);
        clock.addAndGet(Duration.ofSeconds(4).toNanos());
        endedTurn(p, a, "s", 1_000);
        assertSame(b, probe(p));
        assertSame(a, p.select(List.of(a, b), turn("s", 1_000)), "the session itself goes back to its worker");
        p.onComplete(a, true);
        assertSame(a, probe(p), "its next turn took the hold: a's 1,000 against b's 1,500");
    }

    @Test
    void theHoldEndsWithFinishSession() {
        StickyBalancedPolicy p = holding(Duration.ofSeconds(3));
        endedTurn(p, b, "t", 1_500);
        clock.addAndGet(Duration.ofSeconds(4).toNanos());
        endedTurn(p, a, "s", 2_000);
        assertSame(b, probe(p), "a: 2,000 bound and 2,000 held");
        p.finishSession("s");
        assertSame(a, probe(p), "finished: nothing bound or held on a");
        endedTurn(p, a, "u", 2_000);
        clock.addAndGet(Duration.ofSeconds(3).toNanos());
        p.expireIdle(10);
        assertSame(b, probe(p), "u's hold expired, its 2,000 bound tokens stay");
    }

    /** Which worker holds how many tokens of the prompt, as the KV-event index would tell. */
    private static PrefixResidency cachedOn(Worker holder, int tokens) {
        return new PrefixResidency() {
            @Override
            public int inputTokens() {
                return 2_000;
            }

            @Override
            public int creditedTokens(Worker worker) {
                return worker == holder ? tokens : 0;
            }
        };
    }

    private StickyBalancedPolicy byKv(boolean groupByKv) {
        return new StickyBalancedPolicy(table, new StickyBalancedPolicy.Settings(1, "_", 0, 0.5, Duration.ZERO,
                groupByKv));
    }

    @Test
    void aNewSessionJoinsTheWorkerHoldingItsPromptWithinTheMargin() {
        StickyBalancedPolicy p = byKv(true);
        complete(p, List.of(a), "x", 3_000);
        complete(p, List.of(c), "y", 800);
        Worker w = p.select(workers, turn("q_0", 1_000).withPrefix(cachedOn(c, 900)));
        p.onComplete(w, true);
        assertSame(c, w, "c holds the prompt and is 800 above b, within 1 x 1,000");
        Worker far = p.select(workers, turn("r_0", 1_000).withPrefix(cachedOn(a, 900)));
        p.onComplete(far, true);
        assertSame(b, far, "a holds it but is 3,000 above b: beyond the margin");
        Worker unknown = p.select(workers, turn("q_1", 500));
        p.onComplete(unknown, true);
        assertSame(b, unknown, "no residency: the session-id rule; q's last worker c is 800 above b, beyond 1 x 500");
    }

    @Test
    void withoutAHolderOrWithoutTheFlagTheSessionIdRuleDecides() {
        StickyBalancedPolicy p = byKv(true);
        complete(p, List.of(a), "x", 3_000);
        complete(p, List.of(c), "g_0", 800);
        Worker w = p.select(workers, turn("g_1", 1_000).withPrefix(cachedOn(a, 0)));
        p.onComplete(w, true);
        assertSame(c, w, "nobody holds the prompt: the group's worker, 800 above b");
        table.release("g_1");

        StickyBalancedPolicy off = byKv(false);
        assertTrue(!off.usesPrefixResidency());
        Worker ignored = off.select(workers, turn("k_0", 1_000).withPrefix(cachedOn(c, 900)));
        assertSame(b, ignored, "without the flag the residency is not read: c, 800 above b, is not the home");
    }

    @Test
    void groupKeysStripTheLastSeparatedPart() {
        StickyBalancedPolicy p = policy(1, "_");
        assertEquals("inst_3", p.groupOf("inst_3_12"));
        assertEquals("abc", p.groupOf("abc_0"));
        assertNull(p.groupOf("plain"));
        assertNull(p.groupOf("_leading"));
        assertEquals("a::b", policy(1, "::").groupOf("a::b::c"));
        assertNull(policy(1, "").groupOf("a_b"));
    }

    @Test
    void aSessionWhoseWorkerIsGoneIsReboundAndCarriesItsTokensThere() {
        StickyBalancedPolicy p = policy(0, "");
        Worker home = complete(p, workers, "s", 5_000);
        List<Worker> without = new ArrayList<>(workers);
        without.remove(home);
        Worker moved = complete(p, without, "s", 6_000);
        assertTrue(moved != home);
        assertNull(table.boundTokens().get(home.url()));
        assertEquals(6_000L, table.boundTokens().get(moved.url()));
        assertEquals(1, p.sessionStats().rebound());
    }

    @Test
    void releaseIsIdempotentAndGivesTheTokensBack() {
        StickyBalancedPolicy p = policy(0, "");
        complete(p, workers, "s", 5_000);
        p.finishSession("s");
        p.finishSession("s");
        p.finishSession("never-seen");
        SessionStats s = p.sessionStats();
        assertEquals(0, s.activeSessions());
        assertEquals(1, s.released());
        assertTrue(table.boundTokens().isEmpty());
        complete(p, workers, "s", 10);
        assertEquals(1, p.sessionStats().activeSessions(), "a finished id may start again");
    }

    @Test
    void expiryAndEvictionGiveTheTokensBack() {
        InMemorySessionTable small = new InMemorySessionTable(Duration.ofSeconds(60), 2, clock::get);
        StickyBalancedPolicy p = new StickyBalancedPolicy(small, StickyBalancedPolicy.Settings.DEFAULTS);
        complete(p, workers, "s1", 1_000);
        complete(p, workers, "s2", 2_000);
        complete(p, workers, "s3", 4_000);
        assertEquals(6_000L, small.boundTokens().values().stream().mapToLong(Long::longValue).sum(),
                "the least recently used session was evicted with its tokens");
        clock.addAndGet(Duration.ofSeconds(61).toNanos());
        assertEquals(2, p.expireIdle(10));
        assertTrue(small.boundTokens().isEmpty());
    }

    @Test
    void requestsWithoutASessionAreRoutedAndNotRecorded() {
        StickyBalancedPolicy p = policy(0, "");
        Worker w = p.select(workers, RoutingRequest.of(null, null, "{\"prompt\":\"hi\"}"));
        assertTrue(workers.contains(w));
        assertEquals(0, p.sessionStats().activeSessions());
        assertNull(p.select(List.of(), turn("s", 10)));
    }

    /** N new sessions of equal prompts raced over W workers end with counts that differ by at most one. */
    @Test
    void concurrentNewSessionsReserveAtomically() throws Exception {
        List<Worker> many = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            many.add(Worker.builder("http://w" + i + ":8000").build());
        }
        StickyBalancedPolicy p = policy(0, "");
        int threads = 6;
        int perThread = 250;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < perThread; i++) {
                        p.select(many, turn("t" + thread + "-" + i, 500));
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        }
        Map<String, Integer> counts = new HashMap<>(p.sessionStats().activeByWorker());
        int min = counts.values().stream().mapToInt(Integer::intValue).min().orElseThrow();
        int max = counts.values().stream().mapToInt(Integer::intValue).max().orElseThrow();
        assertEquals(many.size(), counts.size());
        assertTrue(max - min <= 1, counts.toString());
        assertEquals(threads * perThread, p.sessionStats().activeSessions());
        assertEquals(threads * perThread * 500L,
                table.boundTokens().values().stream().mapToLong(Long::longValue).sum(), "tokens conserved");
    }
}
