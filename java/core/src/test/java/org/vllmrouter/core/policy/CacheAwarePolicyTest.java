package org.vllmrouter.core.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.worker.Worker;

class CacheAwarePolicyTest {
    private static final CacheAwarePolicy.Settings SETTINGS = new CacheAwarePolicy.Settings(0.5, 4, 1.5, 0, 1_000_000);

    private static List<Worker> workers(int n) {
        List<Worker> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(Worker.builder("http://w" + i + ":8000").build());
        }
        return out;
    }

    private static RoutingRequest text(String t) {
        return RoutingRequest.of(null, null, t);
    }

    @Test
    void sharedPrefixGoesToTheSameWorkerAndNewTextToTheSmallestTree() {
        CacheAwarePolicy p = new CacheAwarePolicy(SETTINGS);
        List<Worker> ws = workers(2);
        String conversation = "system: you are helpful. user: tell me about radix trees";
        Worker first = p.select(ws, text(conversation));
        assertSame(first, p.select(ws, text(conversation + " assistant: they are tries. user: more")));
        Worker other = p.select(ws, text("a completely different prompt about cooking pasta"));
        assertNotSame(first, other, "unmatched text goes to the worker caching less");
        assertTrue(p.cachedChars(null, first.url()) > 0);
    }

    @Test
    void aResetCacheIsForgottenAndTheOtherWorkersKept() {
        CacheAwarePolicy p = new CacheAwarePolicy(SETTINGS);
        List<Worker> ws = workers(2);
        Worker first = p.select(ws, text("a long shared conversation prefix"));
        Worker other = p.select(ws, text("something else entirely, on the other worker"));
        assertNotSame(first, other);
        p.cacheReset(List.of(first));
        assertEquals(0, p.cachedChars(null, first.url()));
        assertTrue(p.cachedChars(null, other.url()) > 0);
        assertSame(first, p.select(ws, text("a long shared conversation prefix")),
                "the reset worker now holds the least, so it takes the prompt again");
    }

    @Test
    void onlyServedModelsGetATreeOfTheirOwn() {
        CacheAwarePolicy p = new CacheAwarePolicy(SETTINGS);
        List<Worker> ws = List.of(Worker.builder("http://w0:8000").modelId("llama").build(),
                Worker.builder("http://w1:8000").modelId("llama").build());
        Worker served = p.select(ws, RoutingRequest.of(null, "llama", "a prompt for the served model"));
        assertTrue(p.cachedChars("llama", served.url()) > 0);
        for (int i = 0; i < 100; i++) {
            Worker w = p.select(ws, RoutingRequest.of(null, "made-up-" + i, "prompt " + i));
            assertEquals(0, p.cachedChars("made-up-" + i, w.url()), "no tree for a model nobody serves");
        }
        assertTrue(p.cachedChars(null, ws.get(0).url()) + p.cachedChars(null, ws.get(1).url()) > 0,
                "unserved names share the tree of requests naming no model");
    }

    @Test
    void matchBelowThresholdGoesToSmallestTree() {
        CacheAwarePolicy p = new CacheAwarePolicy(new CacheAwarePolicy.Settings(0.9, 4, 1.5, 0, 1_000_000));
        List<Worker> ws = workers(2);
        Worker first = p.select(ws, text("abcdefghij"));
        assertNotSame(first, p.select(ws, text("abcdeXXXXXXXXXX")), "50% match is below 0.9");
    }

    @Test
    void imbalanceOverridesCache() {
        CacheAwarePolicy p = new CacheAwarePolicy(SETTINGS);
        List<Worker> ws = workers(2);
        Worker first = p.select(ws, text("the same prompt"));
        for (int i = 0; i < 10; i++) {
            first.incrementLoad();
        }
        Worker other = ws.get(0) == first ? ws.get(1) : ws.get(0);
        assertSame(other, p.select(ws, text("the same prompt")));
    }

    @Test
    void treesAreSeparatePerModel() {
        CacheAwarePolicy p = new CacheAwarePolicy(SETTINGS);
        List<Worker> ws = List.of(Worker.builder("http://w0:8000").modelId("m1").build(),
                Worker.builder("http://w1:8000").modelId("m2").build());
        Worker w = p.select(ws, RoutingRequest.of(null, "m1", "prompt text"));
        assertEquals("prompt text".length(), p.cachedChars("m1", w.url()));
        assertEquals(0, p.cachedChars("m2", w.url()));
        assertEquals(0, p.cachedChars(null, w.url()));
    }

    @Test
    void noCandidatesNoWorker() {
        assertNull(new CacheAwarePolicy(SETTINGS).select(List.of(), text("x")));
    }

    @Test
    void radixTreeCountsCharactersPerTenantAcrossSplits() {
        ApproximateRadixTree tree = new ApproximateRadixTree();
        tree.insert("hello world", "a");
        tree.insert("hello there", "b");
        tree.insert("hello world again", "a");
        assertEquals("hello world again".length(), tree.size("a"));
        assertEquals("hello there".length(), tree.size("b"));
        ApproximateRadixTree.Match m = tree.prefixMatch("hello world and more", Set.of("a", "b"));
        assertEquals("hello world a".length(), m.matchedChars());
        assertEquals("a", m.tenant());
        ApproximateRadixTree.Match onlyB = tree.prefixMatch("hello world", Set.of("b"));
        assertEquals("hello ".length(), onlyB.matchedChars());
        assertEquals("b", onlyB.tenant());
        assertEquals(0, tree.prefixMatch("zzz", Set.of("a", "b")).matchedChars());
        assertNull(tree.prefixMatch("zzz", Set.of("a", "b")).tenant());
    }

    @Test
    void evictionRemovesLeastRecentlyUsedLeavesUntilUnderTheLimit() {
        ApproximateRadixTree tree = new ApproximateRadixTree();
        tree.insert("old-prefix-aaaaaaaaaa", "a");
        tree.insert("new-prefix-bbbbbbbbbb", "a");
        tree.insert("unrelated tenant text", "b");
        tree.evict(25);
        assertTrue(tree.size("a") <= 25, "size " + tree.size("a"));
        assertEquals(0, tree.prefixMatch("old-prefix-aaaaaaaaaa", Set.of("a")).matchedChars(), "oldest leaf evicted");
        assertEquals("new-prefix-bbbbbbbbbb".length(), tree.prefixMatch("new-prefix-bbbbbbbbbb", Set.of("a")).matchedChars());
        assertEquals("unrelated tenant text".length(), tree.size("b"), "other tenants untouched");
    }

    @Test
    void evictionKeepsSharedPrefixesOfOtherTenants() {
        ApproximateRadixTree tree = new ApproximateRadixTree();
        tree.insert("shared prefix then a", "a");
        tree.insert("shared prefix then b", "b");
        tree.evict(0);
        assertEquals(0, tree.size("a"));
        assertEquals(0, tree.size("b"));
        assertEquals(0, tree.prefixMatch("shared prefix then a", Set.of("a", "b")).matchedChars());
        tree.insert("shared prefix then c", "c");
        assertEquals("shared prefix then c".length(), tree.size("c"));
    }
}
