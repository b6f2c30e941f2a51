package org.vllmrouter.core.settings;

import java.util.List;
import org.vllmrouter.core.config.RouterConfig;

/**
 * Who may call the router.
 *
 * @param adminApiKey the key the admin routes ask for (null or empty: they are open)
 * @param apiKeyValidationUrls where a client's key is checked (empty: clients are not asked for one)
 */
public record AuthSettings(String adminApiKey, List<String> apiKeyValidationUrls) {
    public static AuthSettings from(RouterConfig c) {
        return new AuthSettings(c.adminApiKey(), c.apiKeyValidationUrls());
    }

    /** Whether the admin routes ask for a key. */
    public boolean adminLocked() {
        return adminApiKey != null && !adminApiKey.isEmpty();
    }
}
