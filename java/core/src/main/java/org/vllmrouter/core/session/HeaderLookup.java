package org.vllmrouter.core.session;

import java.util.Locale;
import java.util.Map;

/** Request headers as the engine sees them: lookup by lower-case name, null when absent. */
@FunctionalInterface
public interface HeaderLookup {
    HeaderLookup NONE = name -> null;

    String get(String lowerCaseName);

    /** Headers from a map whose keys may use any case. */
    static HeaderLookup of(Map<String, String> headers) {
        Map<String, String> lower = new java.util.HashMap<>();
        headers.forEach((k, v) -> lower.put(k.toLowerCase(Locale.ROOT), v));
        return lower::get;
    }
}
