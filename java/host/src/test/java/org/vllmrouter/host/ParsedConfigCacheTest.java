package org.vllmrouter.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ParsedConfigCacheTest {
    private static final String CONFIG = "{\"worker_urls\":[\"http://w1:8000\"],\"policy\":\"sticky_least_loaded\"}\n";

    @Test
    void theKeyTellsArgvApartIncludingWhereOneArgumentEndsAndTheNextBegins() {
        assertEquals(ParsedConfigCache.key(List.of("--policy", "random")), ParsedConfigCache.key(List.of("--policy", "random")));
        assertNotEquals(ParsedConfigCache.key(List.of("--policy", "random")), ParsedConfigCache.key(List.of("--policy", "round_robin")));
        assertNotEquals(ParsedConfigCache.key(List.of("a b")), ParsedConfigCache.key(List.of("a", "b")));
        assertNotEquals(ParsedConfigCache.key(List.of()), ParsedConfigCache.key(List.of("")));
    }

    @Test
    void anEntryWrittenIsReadBackForTheSameArgvOnly(@TempDir Path dir) {
        ParsedConfigCache entry = ParsedConfigCache.in(dir, List.of("--worker-urls", "http://w1:8000"));
        assertEquals(Optional.empty(), entry.read());
        entry.write(CONFIG);
        assertEquals(Optional.of(CONFIG), ParsedConfigCache.in(dir, List.of("--worker-urls", "http://w1:8000")).read());
        assertEquals(Optional.empty(), ParsedConfigCache.in(dir, List.of("--worker-urls", "http://w2:8000")).read());
    }

    @Test
    void aDamagedEntryIsAMissAndTheNextWriteReplacesIt(@TempDir Path dir) throws Exception {
        ParsedConfigCache entry = ParsedConfigCache.in(dir, List.of("--port", "8080"));
        entry.write(CONFIG);
        Path file;
        try (var files = Files.list(dir)) {
            file = files.filter(f -> f.getFileName().toString().startsWith("parsed-")).findFirst().orElseThrow();
        }
        Files.writeString(file, "{\"worker_urls\":[\"http://w1");
        assertEquals(Optional.empty(), entry.read());
        Files.writeString(file, "{\"no_such_field\":1}");
        assertEquals(Optional.empty(), entry.read(), "an entry the engine cannot read is not used");
        entry.write(CONFIG);
        assertEquals(Optional.of(CONFIG), entry.read());
        try (var files = Files.list(dir)) {
            assertEquals(1, files.count(), "no partial files are left behind");
        }
    }

    @Test
    void aCacheDirectoryThatCannotBeMadeOnlyMeansNoCaching(@TempDir Path dir) throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("file"), "x");
        ParsedConfigCache entry = ParsedConfigCache.in(notADirectory.resolve("cache"), List.of("--port", "1"));
        entry.write(CONFIG);
        assertEquals(Optional.empty(), entry.read());
    }
}
