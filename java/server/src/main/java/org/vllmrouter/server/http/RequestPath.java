package org.vllmrouter.server.http;

import io.netty.handler.codec.http.QueryStringDecoder;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The request target, decoded once. Routing uses {@link #routeKey()} (decoded, trailing slash dropped, lower-cased)
 * so that no spelling of an admin path can slip past its route into the proxy fallback; encodings that could mean
 * two different paths ({@code %2F}, {@code %2E}, {@code %5C}, {@code //}, dot segments, controls) are rejected.
 */
public record RequestPath(String rawPath, String rawQuery, String path, String routeKey, Map<String, List<String>> params) {
    public static final String WORKERS_PREFIX = "/workers/";
    /** Route key of {@code /workers/{url}}; {@link #path()} then ends with the decoded worker URL. */
    public static final String WORKER_ITEM_ROUTE = "/workers/{url}";

    public static final class InvalidPathException extends Exception {
        InvalidPathException(String message) {
            super(message);
        }
    }

    public static RequestPath parse(String uri) throws InvalidPathException {
        if (uri.isEmpty() || uri.charAt(0) != '/') {
            throw new InvalidPathException("Invalid request path: only origin-form targets starting with '/' are accepted");
        }
        int q = uri.indexOf('?');
        String rawPath = q < 0 ? uri : uri.substring(0, q);
        String rawQuery = q < 0 ? "" : uri.substring(q + 1);
        if (uri.indexOf('#') >= 0) {
            throw new InvalidPathException("Invalid request path: fragments are not allowed");
        }
        Map<String, List<String>> params;
        try {
            params = rawQuery.isEmpty() ? Map.of()
                    : new QueryStringDecoder(rawQuery, StandardCharsets.UTF_8, false).parameters();
        } catch (IllegalArgumentException e) {
            throw new InvalidPathException("Invalid query string: " + e.getMessage());
        }
        if (rawPath.regionMatches(true, 0, WORKERS_PREFIX, 0, WORKERS_PREFIX.length())
                && rawPath.length() > WORKERS_PREFIX.length()) {
            // /workers/{url}: the one route whose segment carries an encoded URL, so %2F is meant literally here.
            String workerUrl;
            try {
                workerUrl = QueryStringDecoder.decodeComponent(rawPath.substring(WORKERS_PREFIX.length()), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw new InvalidPathException("Invalid request path: " + e.getMessage());
            }
            return new RequestPath(rawPath, rawQuery, WORKERS_PREFIX + workerUrl, WORKER_ITEM_ROUTE, params);
        }
        String path = decodePath(rawPath);
        if (path.contains("//")) {
            throw new InvalidPathException("Invalid request path: empty path segment");
        }
        if (hasDotSegment(path)) {
            throw new InvalidPathException("Invalid request path: dot segments are not allowed");
        }
        String trimmed = path.length() > 1 && path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
        return new RequestPath(rawPath, rawQuery, trimmed, trimmed.toLowerCase(Locale.ROOT), params);
    }

    /** Whether a segment of {@code path} (which starts with '/') is "." or ".."; found without splitting it. */
    private static boolean hasDotSegment(String path) {
        for (int i = path.indexOf("/."); i >= 0; i = path.indexOf("/.", i + 1)) {
            int end = i + 2;
            if (end < path.length() && path.charAt(end) == '.') {
                end++;
            }
            if (end == path.length() || path.charAt(end) == '/') {
                return true;
            }
        }
        return false;
    }

    /** The single value of a query parameter; null when absent; differing repeated values are an error. */
    public String param(String name) throws InvalidPathException {
        List<String> values = params.get(name);
        if (values == null || values.isEmpty()) {
            return null;
        }
        String first = values.get(0);
        for (String v : values) {
            if (!v.equals(first)) {
                throw new InvalidPathException("Query parameter '" + name + "' is given more than once with different values");
            }
        }
        return first;
    }

    /** Path and query exactly as the client sent them, for forwarding to a worker. */
    public String rawTarget() {
        return rawQuery.isEmpty() ? rawPath : rawPath + "?" + rawQuery;
    }

    private static String decodePath(String raw) throws InvalidPathException {
        if (plainAscii(raw)) {
            return raw;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%') {
                if (i + 2 >= raw.length()) {
                    throw new InvalidPathException("Invalid request path: truncated percent-encoding");
                }
                int hi = Character.digit(raw.charAt(i + 1), 16);
                int lo = Character.digit(raw.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw new InvalidPathException("Invalid request path: malformed percent-encoding");
                }
                int b = hi << 4 | lo;
                if (b == '/' || b == '\\' || b == '.' || b == '%' || b < 0x20 || b == 0x7f) {
                    throw new InvalidPathException("Invalid request path: ambiguous percent-encoded character %"
                            + raw.substring(i + 1, i + 3));
                }
                bytes.write(b);
                i += 2;
            } else if (c == '\\' || c < 0x20 || c == 0x7f || c > 0x7e) {
                throw new InvalidPathException("Invalid request path: illegal character");
            } else {
                bytes.write(c);
            }
        }
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes.toByteArray()))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new InvalidPathException("Invalid request path: percent-encoding is not valid UTF-8");
        }
    }

    /** The common case: printable ASCII without escapes or backslashes decodes to itself. */
    private static boolean plainAscii(String raw) {
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c <= 0x20 || c >= 0x7f || c == '%' || c == '\\') {
                return false;
            }
        }
        return true;
    }
}
