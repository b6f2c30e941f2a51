package org.vllmrouter.redis;

/**
 * Key names. Every key of one pool (a sticky policy instance's scope plus the request's model) carries the same
 * hash tag {@code {scope|pool}}, so a script touches one hash slot and the layout works on a Redis Cluster. Scope
 * and pool are escaped so that neither can end the tag early or collide with another pair:
 *
 * <pre>
 * vllm-router:session:{scope|pool}:ID   string  the worker URL the session is bound to
 * vllm-router:pool:{scope|pool}:idle    zset    session id -> last use (ms since the epoch)
 * vllm-router:pool:{scope|pool}:counts  hash    worker URL -> sessions bound to it
 * vllm-router:pool:{scope|pool}:stats   hash    started, released, expired, rebound; epoch (changes when the
 *                                               pool's data was lost)
 * vllm-router:pool:{scope|pool}:released zset   session id -> time of its last release (kept ten minutes)
 * vllm-router:scope:{scope}:pools       set     the pools of a scope (finish_session releases a session in all)
 * </pre>
 *
 * Routers track the prefix of the binding keys ({@link #BINDING_PREFIX}) for their near caches.
 */
final class Keys {
    static final String BINDING_PREFIX = "vllm-router:session:";
    private static final String POOL_PREFIX = "vllm-router:pool:";
    private static final String SCOPE_PREFIX = "vllm-router:scope:";

    private Keys() {
    }

    /** The keys of one pool. */
    record Pool(String tag, String bindingPrefix, String idle, String counts, String stats, String released) {
        String binding(String sessionId) {
            return bindingPrefix + sessionId;
        }
    }

    static Pool pool(String scope, String pool) {
        String tag = escape(scope) + "|" + escape(pool);
        String base = POOL_PREFIX + "{" + tag + "}:";
        return new Pool(tag, BINDING_PREFIX + "{" + tag + "}:", base + "idle", base + "counts", base + "stats",
                base + "released");
    }

    static String scopePools(String scope) {
        return SCOPE_PREFIX + "{" + escape(scope) + "}:pools";
    }

    /** A binding key split into its pool's tag and the session id, or null for any other key. */
    record BindingKey(String tag, String sessionId) {
    }

    static BindingKey parseBinding(String key) {
        if (!key.startsWith(BINDING_PREFIX + "{")) {
            return null;
        }
        int open = BINDING_PREFIX.length() + 1;
        int close = key.indexOf('}', open);
        if (close < 0 || !key.startsWith(":", close + 1)) {
            return null;
        }
        return new BindingKey(key.substring(open, close), key.substring(close + 2));
    }

    /** Percent-escapes the characters that delimit a tag or its parts. */
    static String escape(String s) {
        StringBuilder out = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            String code = switch (c) {
                case '%' -> "%25";
                case '{' -> "%7B";
                case '}' -> "%7D";
                case '|' -> "%7C";
                default -> null;
            };
            if (code != null && out == null) {
                out = new StringBuilder(s.length() + 8).append(s, 0, i);
            }
            if (out != null) {
                if (code != null) {
                    out.append(code);
                } else {
                    out.append(c);
                }
            }
        }
        return out == null ? s : out.toString();
    }
}
