package org.vllmrouter.core.config;

/** A configuration that cannot be used; the message is the whole user-facing text. */
public class ConfigException extends Exception {
    public ConfigException(String message) {
        super(message);
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
