package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HeapGrowthBoundTest {
    private static final long MIB = 1L << 20;

    /** A heap whose use the test sets, and whose whole-heap collection leaves what the test says it keeps. */
    private static final class FakeHeap {
        final AtomicLong inUse = new AtomicLong();
        long keptByCollection;
        final List<Long> collectedAt = new ArrayList<>();

        void collect() {
            collectedAt.add(inUse.get());
            inUse.set(keptByCollection);
        }
    }

    @Test
    void collectsOnlyWhenTheHeapInUseIsOverTheLimitAndThenAllowsTwiceWhatWasKept() {
        FakeHeap heap = new FakeHeap();
        HeapGrowthBound bound = new HeapGrowthBound(32 * MIB, heap.inUse::get, heap::collect);

        heap.inUse.set(32 * MIB);
        assertFalse(bound.check(), "at the floor");
        heap.inUse.set(32 * MIB + 1);
        heap.keptByCollection = 10 * MIB;
        assertTrue(bound.check());
        assertEquals(List.of(32 * MIB + 1), heap.collectedAt);
        assertEquals(32 * MIB, bound.limitBytes(), "twice 10 MiB is below the floor");

        // Live state grew (many sessions): the limit follows it, so collections do not come back to back.
        heap.inUse.set(200 * MIB);
        heap.keptByCollection = 150 * MIB;
        assertTrue(bound.check());
        assertEquals(300 * MIB, bound.limitBytes());
        heap.inUse.set(299 * MIB);
        assertFalse(bound.check());

        // Sessions finished: the next collection brings the limit back down.
        heap.inUse.set(301 * MIB);
        heap.keptByCollection = 5 * MIB;
        assertTrue(bound.check());
        assertEquals(32 * MIB, bound.limitBytes());
        assertEquals(3, heap.collectedAt.size());
    }

    @Test
    void theFloorIsASizeAsTheJvmWritesOneOrOff() {
        assertEquals(Optional.of(32 * MIB), HeapGrowthBound.floor("32m"));
        assertEquals(Optional.of(32 * MIB), HeapGrowthBound.floor("32M"));
        assertEquals(Optional.of(2048 * MIB), HeapGrowthBound.floor("2g"));
        assertEquals(Optional.of(MIB), HeapGrowthBound.floor("1024k"));
        assertEquals(Optional.of(MIB), HeapGrowthBound.floor("1048576"));
        assertEquals(Optional.empty(), HeapGrowthBound.floor("off"));
        assertEquals(Optional.empty(), HeapGrowthBound.floor(null));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "lots", "32mb", "-32m", "32 m", "0", "1023k", "1000000000g", "3.5m", "OFF "})
    void anythingElseIsRefusedNamingTheProperty(String value) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HeapGrowthBound.floor(value));
        assertEquals("-Dvllm.router.fullCollectionFloor=" + value
                + " is not a heap size of at least 1 MiB (such as 20m) or off", e.getMessage());
    }

    /**
     * Under the serial collector, state that lives a while and then dies grows the committed heap with no full
     * collection, towards the maximum; with the bound the heap stays near twice the live state. A child JVM each, since
     * the collector and heap sizes are the process's.
     */
    @Test
    void theSerialCollectorsHeapStaysNearItsLiveStateOnlyWithTheBound() throws Exception {
        long unbound = mostCommittedHeap("unbound");
        long bound = mostCommittedHeap("bound");
        assertTrue(unbound > 256 * MIB, "without the bound the heap grew to " + unbound / MIB + " MiB");
        assertTrue(bound < 96 * MIB, "with the bound the heap grew to " + bound / MIB + " MiB");
    }

    /**
     * A young generation larger than the floor (a user's {@code -Xmn64m}) fills with the garbage of requests between
     * its collections; that is no reason for a whole-heap collection. Counting the young generation's use, the bound
     * collected the whole heap about once a check.
     */
    @Test
    void aYoungGenerationLargerThanTheFloorDoesNotTriggerWholeHeapCollections() throws Exception {
        long collections = childRun("young-garbage", "-Xms128m", "-Xmn64m");
        assertEquals(0, collections, "whole-heap collections while only young garbage was made");
    }

    /**
     * The bound allows twice what a whole-heap collection kept. The serial collector's whole-heap collection leaves up
     * to 5% of its old generation's capacity as dead space in place ({@code MarkSweepDeadRatio}), and with the default
     * initial heap (1/64 of the machine's memory: 384 MiB on 24 GiB) that is about 18 MiB: garbage the bound took for
     * live state, doubling its limit. The engine's options set the ratio to 0 (bridge/engine-jvm.options).
     */
    @Test
    void aWholeHeapCollectionWithoutDeadSpaceKeepsOnlyTheLiveState() throws Exception {
        long compacted = childRun("kept", "-Xms384m", "-Xmn8m", "-XX:MarkSweepDeadRatio=0");
        long withDeadSpace = childRun("kept", "-Xms384m", "-Xmn8m");
        // 1.6 MiB of entries stay, spread through 400 MiB of promotions, beside the JVM's own objects: measured 2.1-2.9
        // MiB kept without dead space (6.3 MiB once, inside the whole suite) and 20 MiB with it.
        String kept = "kept " + compacted / 1024 + " KiB without dead space, " + withDeadSpace / 1024 + " KiB with it";
        assertTrue(compacted < 8 * MIB, kept);
        assertTrue(withDeadSpace > compacted + 8 * MIB, kept);
    }

    private static long mostCommittedHeap(String mode) throws Exception {
        return childRun(mode, "-Xms16m", "-Xmn4m");
    }

    /** Runs {@link HeapChurn} in {@code mode} under the serial collector with these JVM options; the number it prints. */
    private static long childRun(String mode, String... jvmOptions) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx1g"));
        command.addAll(List.of(jvmOptions));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), HeapChurn.class.getName(), mode));
        Process p = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line = out.readLine();
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), mode + " run did not end");
            assertEquals(0, p.exitValue(), mode);
            return Long.parseLong(line.strip());
        } finally {
            p.destroyForcibly();
        }
    }
}
