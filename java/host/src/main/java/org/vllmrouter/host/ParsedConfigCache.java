package org.vllmrouter.host;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;

/**
 * The configurations {@code launch} has parsed before, keyed by the argv and the exact jars of
 * this launcher, so a router restarted with the same flags (as a training job restarts it) starts
 * without the GraalPy parse.
 *
 * <p>The parse is a pure function of the argv and the code that runs it ({@code router_args.py}
 * and GraalPy, both inside the jars; it reads no environment), so an entry is exactly what a new
 * parse would produce. Only parses that succeeded without a word on stderr are kept, so a hit has
 * nothing to replay; usage errors and {@code --help} always run the parse. The directory comes from
 * {@value #DIRECTORY_ENV}, which the distribution's script sets; without it nothing is cached.
 */
final class ParsedConfigCache {
    static final String DIRECTORY_ENV = "VLLM_ROUTER_PARSE_CACHE_DIR";

    private final Path entry;

    private ParsedConfigCache(Path entry) {
        this.entry = entry;
    }

    /** The cache entry for {@code argv} with this class path, or empty when caching is off. */
    static Optional<ParsedConfigCache> forArgv(List<String> argv) {
        String directory = System.getenv(DIRECTORY_ENV);
        if (directory == null || directory.isBlank()) {
            return Optional.empty();
        }
        return Optional.of(in(Path.of(directory), argv));
    }

    static ParsedConfigCache in(Path directory, List<String> argv) {
        return new ParsedConfigCache(directory.resolve("parsed-" + key(argv) + ".json"));
    }

    /** The argv and, for every class path entry, its path, size and modification time. */
    static String key(List<String> argv) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            for (String classPathEntry : System.getProperty("java.class.path").split(File.pathSeparator)) {
                File jar = new File(classPathEntry);
                update(digest, "jar " + jar.getAbsolutePath() + " " + jar.length() + " " + jar.lastModified());
            }
            for (String arg : argv) {
                update(digest, "arg " + arg);
            }
            return HexFormat.of().formatHex(digest.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
        }
    }

    private static void update(MessageDigest digest, String field) {
        byte[] bytes = field.getBytes(StandardCharsets.UTF_8);
        digest.update(Integer.toString(bytes.length).getBytes(StandardCharsets.US_ASCII));
        digest.update((byte) ':');
        digest.update(bytes);
    }

    /** The cached configuration JSON, if there is an entry the engine can read. */
    Optional<String> read() {
        try {
            String json = Files.readString(entry, StandardCharsets.UTF_8);
            RouterConfig.fromJson(json);
            touch();
            return Optional.of(json);
        } catch (IOException | ConfigException | RuntimeException unusable) {
            // Missing, or damaged (a full disk, a hand edit): parse again and rewrite it.
            return Optional.empty();
        }
    }

    /** Marks the entry as used, so the launcher script's clean-up of month-old entries spares it. */
    private void touch() {
        try {
            Files.setLastModifiedTime(entry, FileTime.from(Instant.now()));
        } catch (IOException ignored) {
            // A read-only cache still serves; the entry may be removed earlier than it would be.
        }
    }

    /** Keeps {@code json} for the next launch with the same argv; a failure to write only costs that speed-up. */
    void write(String json) {
        Path partial = null;
        try {
            Files.createDirectories(entry.getParent());
            partial = Files.createTempFile(entry.getParent(), "parsed-", ".partial");
            Files.writeString(partial, json, StandardCharsets.UTF_8);
            Files.move(partial, entry, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            partial = null;
        } catch (IOException | RuntimeException ignored) {
            // Read-only or full cache directory: the next launch parses again.
        } finally {
            if (partial != null) {
                partial.toFile().delete();
            }
        }
    }
}
