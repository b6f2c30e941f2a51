package org.vllmrouter.server;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A child JVM's work for {@link HeapGrowthBoundTest}: entries kept a while and then dropped, as sessions are, 400 MiB
 * of them passing through a table of 8,000 (8 MiB live). Prints the largest heap the JVM had committed. With
 * {@code bound} as its argument the process checks its heap every 20 ms against a 16 MiB floor.
 */
public final class HeapChurn {
    private static final int KEPT = 8_000;
    private static final int ENTRY_BYTES = 1024;
    private static final int ENTRIES = 400 * 1024;
    private static final int BURST = 2048;

    private HeapChurn() {}

    public static void main(String[] args) throws InterruptedException {
        Runtime runtime = Runtime.getRuntime();
        if (args.length > 0 && args[0].equals("bound")) {
            new HeapGrowthBound(16L << 20, HeapGrowthBound::heapInUse, System::gc).start(Duration.ofMillis(20));
        }
        Map<Integer, byte[]> kept = new LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, byte[]> eldest) {
                return size() > KEPT;
            }
        };
        long mostCommitted = runtime.totalMemory();
        for (int i = 0; i < ENTRIES; i++) {
            kept.put(i, new byte[ENTRY_BYTES]);
            if (i % BURST == 0) {
                // 2 MiB a burst, about 100 MiB a second: the pace of a busy router's promotions, not a tight loop's.
                Thread.sleep(20);
                mostCommitted = Math.max(mostCommitted, runtime.totalMemory());
            }
        }
        System.out.println(mostCommitted);
    }
}
