package org.vllmrouter.server;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.logging.FileHandler;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import org.vllmrouter.core.settings.LoggingSettings;

/**
 * The engine's logging, from {@code log_level} and {@code log_dir}: one line per record on stderr, and with a log
 * directory the same lines in a file there too. Logging is process-wide, as upstream's is: the last router started
 * with a log directory decides the file.
 *
 * <p>The file is {@code vllm-router.0.log}; java.util.logging's {@link FileHandler} rotates it by size into
 * {@code vllm-router.1.log} ... up to {@value #FILE_COUNT} files of {@value #FILE_LIMIT_BYTES} bytes. That suffices:
 * a router left running by a training job needs its disk use bounded and its recent history kept, nothing a logging
 * framework would add to the engine jar (upstream rotates daily and never deletes).
 */
public final class EngineLogging {
    static final String FORMAT_PROPERTY = "java.util.logging.SimpleFormatter.format";
    static final String FILE_NAME = "vllm-router.%g.log";
    static final int FILE_LIMIT_BYTES = 64 * 1024 * 1024;
    static final int FILE_COUNT = 8;

    private static Path fileDirectory;
    private static FileHandler file;

    private EngineLogging() {}

    /**
     * One line per record, unless the launcher chose a format; call before the first record is logged.
     *
     * <p>A system property, and set here rather than taken from the start's settings: java.util.logging's
     * {@link SimpleFormatter} reads it once, when its class loads, so it must be in place before any logger formats
     * a record, which is before any configuration has been read.
     */
    public static void useOneLineFormat() {
        if (System.getProperty(FORMAT_PROPERTY) == null) {
            System.setProperty(FORMAT_PROPERTY, "%1$tF %1$tT %4$s %3$s: %5$s%6$s%n");
        }
    }

    /**
     * Applies {@code log_level} and {@code log_dir} (created if missing). A directory that cannot hold the log file
     * is a start-up error naming it.
     */
    public static synchronized void configure(LoggingSettings logging) throws RouterStartException {
        useOneLineFormat();
        Logger root = Logger.getLogger("");
        if (logging.level() != null) {
            Level level = level(logging.level());
            root.setLevel(level);
            for (Handler handler : root.getHandlers()) {
                handler.setLevel(level);
            }
        }
        if (logging.dir() != null) {
            Path dir = Path.of(logging.dir()).toAbsolutePath().normalize();
            if (!dir.equals(fileDirectory)) {
                FileHandler opened = open(dir);
                opened.setLevel(root.getLevel() == null ? Level.INFO : root.getLevel());
                if (file != null) {
                    root.removeHandler(file);
                    file.close();
                }
                root.addHandler(opened);
                file = opened;
                fileDirectory = dir;
            }
        }
    }

    private static FileHandler open(Path dir) throws RouterStartException {
        try {
            Files.createDirectories(dir);
            // FileHandler reads '%' as the start of a field ('%g' is the generation); a literal one is '%%'.
            String pattern = dir.toString().replace("%", "%%") + File.separator + FILE_NAME;
            FileHandler handler = new FileHandler(pattern, FILE_LIMIT_BYTES, FILE_COUNT, true);
            handler.setEncoding(StandardCharsets.UTF_8.name());
            handler.setFormatter(new SimpleFormatter());
            return handler;
        } catch (IOException e) {
            throw new RouterStartException("Cannot write logs to --log-dir " + dir + ": " + reason(e), e);
        }
    }

    private static String reason(IOException e) {
        if (e instanceof FileAlreadyExistsException) {
            return "it exists and is not a directory";
        }
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof FileSystemException fs && fs.getReason() != null) {
            return fs.getReason();
        }
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }

    /** Upstream's level names, plus Python's, onto java.util.logging's. */
    private static Level level(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "debug", "trace" -> Level.FINE;
            case "warn", "warning" -> Level.WARNING;
            case "error", "critical" -> Level.SEVERE;
            default -> Level.INFO;
        };
    }
}
