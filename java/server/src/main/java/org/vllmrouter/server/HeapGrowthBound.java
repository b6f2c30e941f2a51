package org.vllmrouter.server;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.vllmrouter.core.config.StartEnvironment;

/**
 * Keeps the engine's old generation near twice what it holds live, whatever comes and goes.
 *
 * <p>The serial collector collects its old generation only when that cannot grow any more: state that lives past a few
 * young collections and then dies (a session's binding once the trainer finishes it or it is evicted, a worker's
 * after it leaves) stays there, and the old generation grows towards the maximum heap, a quarter of the machine's
 * memory by default, every page of it resident. Sessions that start and end steadily grow the engine's RSS with no
 * full collection (docs/perf/memory.md); on a trainer's node the same growth would go on for hundreds of GiB.
 *
 * <p>So, once a {@link #CHECK_INTERVAL}, this compares the old generation's use with a limit, {@link #GROWTH_FACTOR}
 * times what the last whole collection kept but never below a floor, and collects the whole heap when it is over.
 * The pages the old generation has touched then stay below the limit and are reused, and a collection's cost follows
 * the live data it keeps, so the time spent collecting depends on how fast state dies, not on how much there is.
 *
 * <p>The old generation and not the whole heap: the young generation fills and empties ten times a second under
 * load, whatever is live. Counting it, a user's young generation larger than the floor ({@code -Xmn64m}) put the heap
 * over the limit at nearly every check, and the engine collected its whole heap every second, each pause a stop of
 * every connection (docs/perf/memory.md). The old generation's use is read from its memory pool, polled; a usage
 * threshold on the pool would need JMX's notifications, hundreds of classes more for a check made once a second.
 * Only the serial collector is meant: G1, ZGC and Shenandoah collect their old generation concurrently, and a forced
 * whole-heap collection would only stop them. The engine's JVM options turn it on ({@link #FLOOR_PROPERTY}) next to
 * the serial collector, and a user's choice of another collector drops it with ours.
 */
public final class HeapGrowthBound {
    private static final Logger LOG = Logger.getLogger(HeapGrowthBound.class.getName());

    /**
     * The system property that turns the bound on: the floor of the old generation's limit, a size as the JVM writes
     * one (20m), or {@code off}.
     */
    public static final String FLOOR_PROPERTY = StartEnvironment.HEAP_FLOOR_PROPERTY;
    /** How often the old generation's use is compared with the limit. */
    static final Duration CHECK_INTERVAL = Duration.ofSeconds(1);
    /** The old generation may hold this multiple of what the last whole collection kept. */
    static final int GROWTH_FACTOR = 2;

    /** The serial collector's old generation, as its memory pool is named. */
    private static final String SERIAL_OLD_POOL = "Tenured Gen";
    private static final Pattern SIZE = Pattern.compile("([0-9]{1,9})([kmg]?)");
    private static final long MIB = 1L << 20;

    private final long floorBytes;
    private final LongSupplier oldInUse;
    private final Runnable collectWholeHeap;
    private long limitBytes;

    HeapGrowthBound(long floorBytes, LongSupplier oldInUse, Runnable collectWholeHeap) {
        this.floorBytes = floorBytes;
        this.oldInUse = oldInUse;
        this.collectWholeHeap = collectWholeHeap;
        this.limitBytes = floorBytes;
    }

    /**
     * The bound {@link #FLOOR_PROPERTY} asks for over this JVM's heap ({@link StartEnvironment#heapFloor()}), or
     * empty when it is unset or {@code off}.
     *
     * @throws IllegalArgumentException when the property is neither a size nor {@code off}
     */
    public static Optional<HeapGrowthBound> of(StartEnvironment env) {
        return floor(env.heapFloor())
                .map(floor -> new HeapGrowthBound(floor, oldGenerationInUse(), System::gc));
    }

    /**
     * The bytes the serial collector's old generation holds (live data and garbage not yet collected), read from its
     * memory pool; under another collector, which this bound is not meant for, the whole heap's use.
     */
    static LongSupplier oldGenerationInUse() {
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP && pool.getName().equals(SERIAL_OLD_POOL)) {
                return () -> pool.getUsage().getUsed();
            }
        }
        Runtime runtime = Runtime.getRuntime();
        return () -> runtime.totalMemory() - runtime.freeMemory();
    }

    /** The floor in bytes a property value names; empty for no value or {@code off}. */
    static Optional<Long> floor(String value) {
        if (value == null || value.equals("off")) {
            return Optional.empty();
        }
        Matcher size = SIZE.matcher(value.toLowerCase(Locale.ROOT));
        long bytes = size.matches() ? Long.parseLong(size.group(1)) << switch (size.group(2)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            default -> 0;
        } : 0;
        if (bytes < MIB) {
            throw new IllegalArgumentException("-D" + FLOOR_PROPERTY + "=" + value
                    + " is not a heap size of at least 1 MiB (such as 20m) or off");
        }
        return Optional.of(bytes);
    }

    /** Checks once a {@link #CHECK_INTERVAL} on a daemon thread of its own, for the rest of the process. */
    public void start() {
        start(CHECK_INTERVAL);
    }

    void start(Duration interval) {
        // A loop that only sleeps and compares needs little of a thread's default stack.
        Thread checks = new Thread(null, () -> checkEvery(interval), "vllm-router-heap-bound", 256 * 1024);
        checks.setDaemon(true);
        checks.start();
    }

    private void checkEvery(Duration interval) {
        while (true) {
            try {
                Thread.sleep(interval);
            } catch (InterruptedException e) {
                return;
            }
            check();
        }
    }

    /**
     * Collects the whole heap when the old generation holds more than the limit, then sets the limit anew; true if it
     * collected.
     */
    boolean check() {
        long inUse = oldInUse.getAsLong();
        if (inUse <= limitBytes) {
            return false;
        }
        collectWholeHeap.run();
        long kept = oldInUse.getAsLong();
        limitBytes = Math.max(floorBytes, GROWTH_FACTOR * kept);
        if (LOG.isLoggable(Level.FINE)) {
            LOG.fine("Old generation at " + inUse / MIB + " MiB, over the limit: collected, " + kept / MIB
                    + " MiB kept, next limit " + limitBytes / MIB + " MiB");
        }
        return true;
    }

    long limitBytes() {
        return limitBytes;
    }
}
