package org.vllmrouter.core.property;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PropertyTest {
    private static List<Object> drawn(long seed, int tries, Generator<?> generator) {
        List<Object> drawn = new ArrayList<>();
        Property.run(seed, tries, List.of(generator), inputs -> drawn.add(inputs.get(0)));
        return drawn;
    }

    @Test
    void aFailureNamesTheSeedTheTryAndTheInputs() {
        List<Object> seen = new ArrayList<>();
        AssertionError e = assertThrows(AssertionError.class, () -> Property.run(42, 1000,
                List.of(Generator.ints(0, 1000), Generator.anyText(4)), inputs -> {
                    seen.add(inputs.get(1));
                    assertTrue((int) inputs.get(0) < 900, "below 900");
                }));
        String failingText = Property.describe(seen.get(seen.size() - 1));
        assertTrue(e.getMessage().startsWith("property failed on try " + seen.size() + " of 1000 with seed 42"
                + " (replay: -Dproperty.seed=42)\n  input 1: "), e.getMessage());
        assertTrue(e.getMessage().contains("\n  input 2: " + failingText + "\n"), e.getMessage());
        assertTrue(e.getMessage().contains("below 900"), e.getMessage());
    }

    @Test
    void aSeedReplaysTheSameInputs() {
        Generator<String> text = Generator.anyText(20);
        assertEquals(200, drawn(7, 200, text).size());
        assertEquals(drawn(7, 200, text), drawn(7, 200, text));
        assertNotEquals(drawn(7, 200, text), drawn(8, 200, text));
    }

    @Test
    void theEdgeCasesComeFirst() {
        Generator<String> letters = Generator.strings("ab", 1, 3).withEdgeCases("x", "y", "z");
        assertEquals(List.of("x", "y", "z"), drawn(1, 5, letters).subList(0, 3));
        assertEquals(List.of(Integer.MIN_VALUE, 0, -1), drawn(1, 3, Generator.ints(Integer.MIN_VALUE, 0)));
    }

    @Test
    void inputsAreDescribedSoTheyCanBeRetyped() {
        assertEquals("\"a\\\"\\\\\\u0000\\ud800\\u00e9\"", Property.describe("a\"\\\u0000\ud800é"));
        assertEquals("bytes[3] 00 7f ff", Property.describe(new byte[] {0, 0x7f, (byte) 0xff}));
        assertEquals("[\"x\", 1.0, null]", Property.describe(java.util.Arrays.asList("x", 1.0, null)));
    }
}
