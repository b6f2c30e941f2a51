package org.vllmrouter.core.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;

class SessionIndexTest {
    /** 2^k ids of k blocks of "Aa" or "BB": all share one String hash, so only their characters tell them apart. */
    private static List<String> collidingIds(int blocks) {
        List<String> ids = new ArrayList<>();
        for (int bits = 0; bits < 1 << blocks; bits++) {
            StringBuilder id = new StringBuilder();
            for (int k = 0; k < blocks; k++) {
                id.append((bits >> k & 1) == 0 ? "Aa" : "BB");
            }
            ids.add(id.toString());
        }
        return ids;
    }

    @Test
    void idsWithOneHashStayDistinct() {
        List<String> ids = collidingIds(6);
        SessionIndex<Integer> index = new SessionIndex<>();
        for (int i = 0; i < ids.size(); i++) {
            index.add(ids.get(i), SessionIndex.hash(ids.get(i)), i);
        }
        index.checkStructure();
        for (int i = 0; i < ids.size(); i++) {
            String fresh = new String(ids.get(i).toCharArray());
            assertEquals(i, index.get(fresh, SessionIndex.hash(fresh)));
        }
        assertNull(index.get("AaAaAaAaAaA", SessionIndex.hash("AaAaAaAaAaA")));
    }

    /** Adds, replaces and removes (by id and by value) against a HashMap, checking the structure after every step. */
    @RepeatedTest(20)
    void matchesAHashMap(RepetitionInfo rep) {
        long seed = 0x1dec0000L + rep.getCurrentRepetition();
        SplittableRandom random = new SplittableRandom(seed);
        List<String> ids = new ArrayList<>(collidingIds(5));
        for (int i = 0; i < 200; i++) {
            ids.add("id-" + i);
        }
        SessionIndex<Object> index = new SessionIndex<>();
        Map<String, Object> model = new HashMap<>();
        for (int step = 0; step < 5000; step++) {
            String where = "seed=" + seed + " step=" + step;
            String id = ids.get(random.nextInt(ids.size()));
            int hash = SessionIndex.hash(id);
            Object before = model.get(id);
            assertSame(before, index.get(id, hash), where);
            int op = random.nextInt(10);
            if (before == null && op < 6) {
                Object value = new Object();
                index.add(id, hash, value);
                model.put(id, value);
            } else if (before != null && op < 3) {
                Object value = new Object();
                index.replace(hash, before, value);
                model.put(id, value);
            } else if (before != null && op < 6) {
                index.removeValue(hash, before);
                model.remove(id);
            } else {
                assertSame(before, index.remove(id, hash), where);
                model.remove(id);
            }
            index.checkStructure();
            assertEquals(model.size(), index.size(), where);
        }
        Map<String, Object> listed = new HashMap<>();
        index.forEach(listed::put);
        assertEquals(model, listed);
    }
}
