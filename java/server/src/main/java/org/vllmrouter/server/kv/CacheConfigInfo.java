package org.vllmrouter.server.kv;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The KV block size a vLLM worker publishes in its Prometheus text exposition ({@code GET /metrics}), as the
 * {@code block_size} label of {@code vllm:cache_config_info}: the source of the block size for vLLM versions without
 * {@code /get_server_info}. Only that one sample is read, strictly: its label set must follow the text format (quoted
 * values with {@code \\}, {@code \"} and {@code \n} escapes), and the block size must be a positive integer. The
 * Prometheus client in the build writes the format but has no parser.
 */
final class CacheConfigInfo {
    static final String METRIC = "vllm:cache_config_info";
    private static final Pattern LABEL_NAME = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");
    /** Up to 9 digits, so it fits an int. */
    private static final Pattern POSITIVE_INT = Pattern.compile("[1-9][0-9]{0,8}");

    private CacheConfigInfo() {}

    /**
     * The block size in {@code exposition}.
     *
     * @throws IllegalStateException naming what is wrong: no such sample, a malformed label set, no block_size label,
     *                               or one that is not a positive integer
     */
    static int blockSize(String exposition) {
        for (String line : exposition.split("\n", -1)) {
            if (line.startsWith(METRIC + "{")) {
                String value = labels(line.substring(METRIC.length() + 1)).get("block_size");
                if (value == null) {
                    throw new IllegalStateException("/metrics " + METRIC + " has no block_size label");
                }
                if (POSITIVE_INT.matcher(value).matches()) {
                    return Integer.parseInt(value);
                }
                throw new IllegalStateException("/metrics " + METRIC + " block_size is not a positive integer: '"
                        + value + "'");
            }
        }
        throw new IllegalStateException("no " + METRIC + " in /metrics, cannot index");
    }

    /** The labels of {@code rest}, the sample line after its opening brace, up to the closing one. */
    private static Map<String, String> labels(String rest) {
        Map<String, String> labels = new HashMap<>();
        int i = 0;
        while (true) {
            if (i < rest.length() && rest.charAt(i) == '}') {
                return labels;
            }
            int eq = rest.indexOf("=\"", i);
            if (eq <= i || !isLabelName(rest.substring(i, eq))) {
                throw malformed();
            }
            StringBuilder value = new StringBuilder();
            int j = eq + 2;
            for (; j < rest.length() && rest.charAt(j) != '"'; j++) {
                char c = rest.charAt(j);
                if (c == '\\') {
                    if (++j == rest.length()) {
                        throw malformed();
                    }
                    switch (rest.charAt(j)) {
                        case '\\' -> value.append('\\');
                        case '"' -> value.append('"');
                        case 'n' -> value.append('\n');
                        default -> throw malformed();
                    }
                } else {
                    value.append(c);
                }
            }
            if (j == rest.length() || labels.put(rest.substring(i, eq), value.toString()) != null) {
                throw malformed();
            }
            i = j + 1;
            if (i < rest.length() && rest.charAt(i) == ',') {
                i++;
            } else if (i >= rest.length() || rest.charAt(i) != '}') {
                throw malformed();
            }
        }
    }

    private static boolean isLabelName(String name) {
        return LABEL_NAME.matcher(name).matches();
    }

    private static IllegalStateException malformed() {
        return new IllegalStateException("/metrics " + METRIC + " has a malformed label set");
    }
}
