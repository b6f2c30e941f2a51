package org.vllmrouter.core.config;

/**
 * How a URL that may carry credentials ({@code http://user:pass@host}, {@code redis://:pass@host}) is shown in
 * responses, on the dashboard, in metrics and in logs: its user info replaced by {@code ***}.
 */
public final class UrlRedaction {
    private UrlRedaction() {
    }

    /**
     * {@code url} with its user info replaced by {@code ***}; unchanged when it has none. A trailing {@code @N}
     * (digits) is a worker's data-parallel rank, not the end of a user info, and is kept.
     */
    public static String redact(String url) {
        int start = url.indexOf("://");
        if (start < 0) {
            return url;
        }
        start += 3;
        int end = start;
        while (end < url.length() && "/?#".indexOf(url.charAt(end)) < 0) {
            end++;
        }
        String authority = url.substring(start, end);
        int rank = authority.lastIndexOf('@');
        if (rank >= 0 && rank + 1 < authority.length()
                && authority.substring(rank + 1).chars().allMatch(Character::isDigit)) {
            authority = authority.substring(0, rank);
        }
        int at = authority.lastIndexOf('@');
        if (at < 0) {
            return url;
        }
        return url.substring(0, start) + "***" + url.substring(start + at);
    }
}
