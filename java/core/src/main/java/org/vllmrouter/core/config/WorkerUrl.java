package org.vllmrouter.core.config;

import java.net.URI;
import java.net.URISyntaxException;

/**
 * Upstream's worker URL rules, shared by every way a worker arrives (flags, {@code /add_worker}, discovery) so a
 * URL no worker can answer on is refused where it enters instead of waiting out the start-up timeout.
 */
public final class WorkerUrl {
    private WorkerUrl() {
    }

    /** Why {@code url} cannot name a worker (upstream's wording), or null when it can. */
    public static String problem(String url) {
        if (url == null || url.isEmpty()) {
            return "URL cannot be empty";
        }
        if (!url.startsWith("http://") && !url.startsWith("https://") && !url.startsWith("grpc://")) {
            return "URL must start with http://, https://, or grpc://";
        }
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            return "Invalid URL format: " + e.getReason();
        }
        String authority = uri.getRawAuthority();
        if (authority == null) {
            return "URL must have a valid host";
        }
        String hostPort = authority.substring(authority.lastIndexOf('@') + 1);
        int colon = hostPort.lastIndexOf(':');
        boolean hasPort = colon >= 0 && !hostPort.endsWith("]");
        // java.net.URI leaves the host null for names it does not take as server-based (e.g. with '_'), which
        // upstream's URL parser accepts, so the host and port are read from the authority itself.
        if ((hasPort ? hostPort.substring(0, colon) : hostPort).isEmpty()) {
            return "URL must have a valid host";
        }
        if (hasPort && !validPort(hostPort.substring(colon + 1))) {
            return "Port must be between 1 and 65535";
        }
        return null;
    }

    private static boolean validPort(String digits) {
        if (digits.isEmpty()) {
            return true;
        }
        if (digits.length() > 5 || !digits.chars().allMatch(Character::isDigit)) {
            return false;
        }
        int port = Integer.parseInt(digits);
        return port >= 1 && port <= 65535;
    }
}
