package org.vllmrouter.mock.rollout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class BlockTableTest {
    @Test
    void behavesAsAMapUnderRandomPutsAndRemoves() {
        BlockTable table = new BlockTable();
        Map<Long, EngineModel.Block> reference = new HashMap<>();
        SplittableRandom random = new SplittableRandom(1);
        for (int op = 0; op < 200_000; op++) {
            // A small key range makes probe runs collide, wrap and shift back.
            long key = random.nextInt(5_000);
            if (random.nextInt(3) == 0) {
                table.remove(key);
                reference.remove(key);
            } else {
                EngineModel.Block b = new EngineModel.Block();
                table.put(key, b);
                reference.put(key, b);
            }
        }
        assertEquals(reference.size(), table.size());
        for (long key = 0; key < 5_000; key++) {
            EngineModel.Block expected = reference.get(key);
            if (expected == null) {
                assertNull(table.get(key));
            } else {
                assertSame(expected, table.get(key));
            }
        }
    }
}
