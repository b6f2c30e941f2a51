package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import io.netty.util.concurrent.GlobalEventExecutor;

class EngineRehearsalTest {

    @Test
    void rehearsesEveryStepQuietlyAndLeavesNoThreadOrLogLevelBehind() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        Logger ours = Logger.getLogger("org.vllmrouter");
        Level levelBefore = ours.getLevel();
        List<LogRecord> published = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                published.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        capture.setLevel(Level.ALL);
        ours.addHandler(capture);
        try {
            assertTrue(EngineRehearsal.run(), "a rehearsal step failed");
        } finally {
            ours.removeHandler(capture);
        }

        // Netty's shared executor (a JVM-wide singleton, not the rehearsal's) ends itself once idle.
        GlobalEventExecutor.INSTANCE.awaitInactivity(10, TimeUnit.SECONDS);
        assertEquals(levelBefore, ours.getLevel());
        assertEquals(List.of(), published.stream().filter(r -> r.getLevel().intValue() >= Level.INFO.intValue())
                .map(LogRecord::getMessage).toList(), "the rehearsal must not look like the real router in the log");
        List<String> leftOver = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !before.contains(t) && t.isAlive() && !t.isDaemon())
                .map(Thread::getName)
                .collect(Collectors.toList());
        assertEquals(List.of(), leftOver, "threads the rehearsal left running");
    }
}
