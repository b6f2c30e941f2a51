package org.vllmrouter.core.settings;

import org.vllmrouter.core.config.RouterConfig;

/**
 * The engine's logging.
 *
 * @param level upstream's or Python's level name; null keeps the current level
 * @param dir a directory that also gets the log lines; null for stderr only
 */
public record LoggingSettings(String level, String dir) {
    public static LoggingSettings from(RouterConfig c) {
        return new LoggingSettings(c.logLevel(), c.logDir());
    }
}
