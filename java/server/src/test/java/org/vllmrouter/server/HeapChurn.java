package org.vllmrouter.server;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A child JVM's work for {@link HeapGrowthBoundTest}: entries kept a while and then dropped, as sessions are, 400 MiB
 * of them passing through a table of 8,000 (8 MiB live). Prints the largest heap the JVM had committed. With
 * {@code bound} as its argument the process checks its old generation every 20 ms against a 16 MiB floor.
 *
 * <p>With {@code young-garbage}, the bound runs as with {@code bound} while only short-lived garbage is made (a
 * proxy's per-request objects), and the process prints how many whole-heap collections it went through.
 *
 * <p>With {@code kept}, the same 400 MiB pass through the table with no bound while one entry in {@link #STAYING} stays
 * for good (1.6 MiB, spread through the old generation, as long sessions are), then the table is emptied, one
 * whole-heap collection runs, and the process prints what the old generation holds after it: what the bound takes
 * for the live state.
 */
public final class HeapChurn {
    private static final int KEPT = 8_000;
    private static final int ENTRY_BYTES = 1024;
    private static final int ENTRIES = 400 * 1024;
    private static final int BURST = 2048;
    private static final int STAYING = 256;

    private HeapChurn() {}

    public static void main(String[] args) throws InterruptedException {
        Runtime runtime = Runtime.getRuntime();
        String mode = args.length > 0 ? args[0] : "unbound";
        if (mode.equals("bound") || mode.equals("young-garbage")) {
            new HeapGrowthBound(16L << 20, HeapGrowthBound.oldGenerationInUse(), System::gc).start(Duration.ofMillis(20));
        }
        if (mode.equals("young-garbage")) {
            System.out.println(wholeHeapCollectionsWhileMakingGarbage());
            return;
        }
        Map<Integer, byte[]> kept = new LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, byte[]> eldest) {
                return size() > KEPT;
            }
        };
        List<byte[]> staying = new ArrayList<>();
        long mostCommitted = runtime.totalMemory();
        for (int i = 0; i < ENTRIES; i++) {
            byte[] entry = new byte[ENTRY_BYTES];
            kept.put(i, entry);
            if (mode.equals("kept") && i % STAYING == 0) {
                staying.add(entry);
            }
            if (i % BURST == 0) {
                // 2 MiB a burst, about 100 MiB a second: the pace of a busy router's promotions, not a tight loop's.
                Thread.sleep(20);
                mostCommitted = Math.max(mostCommitted, runtime.totalMemory());
            }
        }
        if (mode.equals("kept")) {
            kept.clear();
            System.gc();
            System.out.println(HeapGrowthBound.oldGenerationInUse().getAsLong());
        } else {
            System.out.println(mostCommitted);
        }
        Reference.reachabilityFence(staying);
    }

    /** 400 MiB of 1 KiB arrays, each dropped at once, at about 100 MiB a second; the serial old collector's count. */
    private static long wholeHeapCollectionsWhileMakingGarbage() throws InterruptedException {
        long checksum = 0;
        for (int i = 0; i < ENTRIES; i++) {
            byte[] garbage = new byte[ENTRY_BYTES];
            checksum += garbage.length;
            if (i % BURST == 0) {
                Thread.sleep(20);
            }
        }
        if (checksum != (long) ENTRIES * ENTRY_BYTES) {
            throw new AssertionError(checksum);
        }
        return ManagementFactory.getGarbageCollectorMXBeans().stream()
                .filter(gc -> gc.getName().equals("MarkSweepCompact"))
                .mapToLong(GarbageCollectorMXBean::getCollectionCount)
                .sum();
    }
}
