package org.vllmrouter.core.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.hash.FbiHash;
import org.vllmrouter.core.session.BodySource;
import org.vllmrouter.core.session.HeaderLookup;
import org.vllmrouter.core.session.SessionIdExtractor;
import org.vllmrouter.core.worker.Worker;

class HashingPoliciesTest {

    private static List<Worker> workers(int n) {
        List<Worker> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(Worker.builder("http://10.0.0." + i + ":8000").build());
        }
        return out;
    }

    private static RoutingRequest request(Map<String, String> headers, String body) {
        HeaderLookup h = HeaderLookup.of(headers);
        return RoutingRequest.of(SessionIdExtractor.UPSTREAM.extract(h, BodySource.of(body)), h, () -> body, body.length());
    }

    @Test
    void hashKeysFollowUpstreamPriorities() {
        assertEquals("header:x-session-id:s", HashKeys.consistentHashKey(
                request(Map.of("x-session-id", "s", "x-request-id", "r"), "{\"user\": \"u\"}")));
        assertEquals("session:sp", HashKeys.consistentHashKey(
                request(Map.of(), "{\"session_id\": \"s\", \"session_params\": {\"session_id\": \"sp\"}}")));
        assertEquals("user:u", HashKeys.consistentHashKey(request(Map.of(), "{\"session_id\": \"s\", \"user\": \"u\"}")));
        assertEquals("user:ui", HashKeys.consistentHashKey(request(Map.of(), "{\"user_id\": \"ui\"}")));
        assertEquals("session:s", HashKeys.rendezvousKey(request(Map.of(), "{\"session_id\": \"s\", \"user\": \"u\"}")));
        assertEquals("request:{\"a\":1}", HashKeys.consistentHashKey(request(Map.of(), "{\"a\":1}")));
        assertEquals("request:", HashKeys.textKey(""));
        String longText = "x".repeat(101);
        assertEquals("request_hash:" + String.format("%016x", FbiHash.hash(longText)), HashKeys.textKey(longText));
        assertEquals(HashKeys.textKey(longText), HashKeys.textKey(longText));
        assertEquals("request:" + "x".repeat(100), HashKeys.textKey("x".repeat(100)));
    }

    @Test
    void consistentHashIsStableAndFallsBackToFirstCandidate() {
        ConsistentHashPolicy p = new ConsistentHashPolicy();
        List<Worker> ws = workers(4);
        RoutingRequest r = request(Map.of("x-session-id", "abc"), "");
        Worker w = p.select(ws, r);
        for (int i = 0; i < 5; i++) {
            assertSame(w, p.select(ws, r));
        }
        assertEquals(ConsistentHashPolicy.ownerLookup(ws.stream().map(Worker::url).toList())
                .apply("header:x-session-id:abc"), w.url());
        assertNull(p.select(List.of(), r));
    }

    /** Property: adding a worker to N moves about 1/(N+1) of the keys, and only onto the new worker. */
    @RepeatedTest(10)
    void consistentHashMovesOnlyAboutOneNthOfKeys(RepetitionInfo rep) {
        long seed = 0xc4a5L + rep.getCurrentRepetition();
        SplittableRandom random = new SplittableRandom(seed);
        int n = 3 + random.nextInt(6);
        List<String> urls = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            urls.add("http://" + random.nextInt(256) + "." + random.nextInt(256) + ".0.1:" + (8000 + i));
        }
        List<String> grown = new ArrayList<>(urls);
        String added = "http://added:" + random.nextInt(65536);
        grown.add(added);
        UnaryOperator<String> ownerBefore = ConsistentHashPolicy.ownerLookup(urls);
        UnaryOperator<String> ownerAfter = ConsistentHashPolicy.ownerLookup(grown);
        int keys = 4000;
        int moved = 0;
        for (int k = 0; k < keys; k++) {
            String key = "session:" + random.nextLong();
            String before = ownerBefore.apply(key);
            String after = ownerAfter.apply(key);
            if (!before.equals(after)) {
                moved++;
                assertEquals(added, after, "seed=" + seed + ": a key moved between old workers");
            }
        }
        double expected = (double) keys / (n + 1);
        assertTrue(moved > expected * 0.5 && moved < expected * 1.6,
                "seed=" + seed + " n=" + n + " moved=" + moved + " expected~" + expected);
    }

    /** Property: the rendezvous choice depends on the worker set, not on the order it is listed in. */
    @RepeatedTest(20)
    void rendezvousChoiceIsDeterministicForAWorkerSet(RepetitionInfo rep) {
        long seed = 0x7e57L + rep.getCurrentRepetition();
        SplittableRandom random = new SplittableRandom(seed);
        List<Worker> ws = workers(2 + random.nextInt(10));
        RendezvousHashPolicy p = new RendezvousHashPolicy();
        RoutingRequest r = request(Map.of("x-user-id", "u" + random.nextInt()), "");
        Worker first = p.select(ws, r);
        for (int i = 0; i < 5; i++) {
            List<Worker> shuffled = new ArrayList<>(ws);
            Collections.shuffle(shuffled, new java.util.Random(random.nextLong()));
            assertSame(first, p.select(shuffled, r), "seed=" + seed);
        }
        long best = FbiHash.hash(HashKeys.rendezvousKey(r) + ":" + first.url());
        for (Worker w : ws) {
            assertTrue(Long.compareUnsigned(FbiHash.hash(HashKeys.rendezvousKey(r) + ":" + w.url()), best) <= 0);
        }
    }

    @Test
    void rendezvousSpreadsDifferentKeys() {
        List<Worker> ws = workers(4);
        RendezvousHashPolicy p = new RendezvousHashPolicy();
        Set<Worker> used = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            used.add(p.select(ws, request(Map.of("x-session-id", "s" + i), "")));
        }
        assertEquals(4, used.size());
    }

    @Test
    void roundRobinCycles() {
        RoundRobinPolicy p = new RoundRobinPolicy();
        List<Worker> ws = workers(3);
        RoutingRequest r = RoutingRequest.of(null, null, "");
        List<Worker> picked = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            picked.add(p.select(ws, r));
        }
        assertEquals(List.of(ws.get(0), ws.get(1), ws.get(2), ws.get(0), ws.get(1), ws.get(2)), picked);
        assertNull(p.select(List.of(), r));
    }

    @Test
    void powerOfTwoPrefersLowerEffectiveLoad() {
        PowerOfTwoPolicy p = new PowerOfTwoPolicy();
        List<Worker> ws = workers(2);
        ws.get(0).incrementLoad();
        RoutingRequest r = RoutingRequest.of(null, null, "");
        for (int i = 0; i < 20; i++) {
            assertSame(ws.get(1), p.select(ws, r));
        }
        p.updateLoads(Map.of(ws.get(1).url(), 5));
        for (int i = 0; i < 20; i++) {
            assertSame(ws.get(0), p.select(ws, r));
        }
        assertSame(ws.get(0), p.select(List.of(ws.get(0)), r));
    }

    @Test
    void randomCoversAllCandidates() {
        RandomPolicy p = new RandomPolicy();
        List<Worker> ws = workers(3);
        Set<Worker> seen = new HashSet<>();
        for (int i = 0; i < 300; i++) {
            seen.add(p.select(ws, RoutingRequest.of(null, null, "")));
        }
        assertEquals(3, seen.size());
        assertNull(p.select(List.of(), RoutingRequest.of(null, null, "")));
    }

    @Test
    void rendezvousTiesGoToTheLastCandidateAndStickyTiesToTheFirst() {
        Worker a = Worker.builder("http://same:1").build();
        Worker b = Worker.builder("http://same:1").build();
        assertSame(b, org.vllmrouter.core.hash.Rendezvous.highest(List.of(a, b), "k", true));
        assertSame(a, org.vllmrouter.core.hash.Rendezvous.highest(List.of(a, b), "k", false));
    }
}
