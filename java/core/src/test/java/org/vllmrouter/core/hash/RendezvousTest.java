package org.vllmrouter.core.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.vllmrouter.core.worker.Worker;

class RendezvousTest {

    @Test
    void rankedListsEveryCandidateByFallingWeightStartingWithTheStickyChoice() {
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            workers.add(Worker.builder("http://w" + i + ":8000").build());
        }
        for (int k = 0; k < 200; k++) {
            String key = "session-" + k;
            List<Worker> ranked = Rendezvous.ranked(workers, key);
            assertEquals(new HashSet<>(workers), new HashSet<>(ranked), key);
            assertEquals(workers.size(), ranked.size(), key);
            assertSame(Rendezvous.highest(workers, key, false), ranked.get(0), key);
            for (int i = 1; i < ranked.size(); i++) {
                long before = Rendezvous.weight(key, ranked.get(i - 1).url());
                long after = Rendezvous.weight(key, ranked.get(i).url());
                assertTrue(Long.compareUnsigned(before, after) >= 0, key);
            }
        }
    }

    @Test
    void equalWeightsKeepCandidateOrder() {
        Worker a = Worker.builder("http://same:1").build();
        Worker b = Worker.builder("http://same:1").build();
        List<Worker> ab = Rendezvous.ranked(List.of(a, b), "k");
        assertSame(a, ab.get(0));
        assertSame(b, ab.get(1));
        List<Worker> ba = Rendezvous.ranked(List.of(b, a), "k");
        assertSame(b, ba.get(0));
        assertSame(a, ba.get(1));
    }
}
