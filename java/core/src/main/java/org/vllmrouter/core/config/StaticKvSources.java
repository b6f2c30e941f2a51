package org.vllmrouter.core.config;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The static KV event sources of {@code --kv-event-source W=E[,E...]} and {@code --kv-event-replay-source} (regular
 * workers) or {@code --pd-kv-events} (the prefill workers of vLLM PD mode): for each worker its endpoints, one per
 * data-parallel rank in order, and as many replay endpoints or none. Checked in upstream's order with upstream's
 * messages. Deviation: a {@code --pd-kv-events} {@code ipc://} endpoint, which upstream accepts, is refused, because
 * JeroMQ's ipc is TCP on loopback and never reaches a vLLM publisher's Unix socket.
 */
public final class StaticKvSources {
    /** One worker's publishers; {@code replayEndpoints} is empty or as long as {@code endpoints}. */
    public record Source(String worker, List<String> endpoints, List<String> replayEndpoints) {
    }

    /** Upstream fixes the block size of {@code --pd-kv-events} sources; there is no flag for it. */
    public static final int PD_BLOCK_SIZE = 16;

    private static final String IPC = "ipc://";
    private static final Pattern TCP = Pattern.compile("tcp://(\\[[^\\]/@]+\\]|[^:/@\\[\\]]+):(\\d{1,5})");
    private static final List<String> UNSPECIFIED_HOSTS =
            List.of("0.0.0.0", "[::]", "0", "0x0", "[::ffff:0:0]", "[0:0:0:0:0:0:0:0]");

    private StaticKvSources() {
    }

    /** The configured sources by worker URL, in flag order; empty when there are none. */
    public static Map<String, Source> of(RouterConfig c) throws ConfigException {
        Map<String, Source> prefill = prefillSources(c);
        if (c.kvEventSource().isEmpty() && c.kvEventReplaySource().isEmpty()) {
            return prefill;
        }
        if (c.kvEventModel() == null || c.kvEventModel().isEmpty() || c.workerUrls().isEmpty()) {
            throw new ConfigException("static KV event sources require worker URLs and model identity");
        }
        Map<String, List<String>> events = endpoints("--kv-event-source", c.kvEventSource());
        Map<String, List<String>> replays = endpoints("--kv-event-replay-source", c.kvEventReplaySource());
        if (c.isPdMode()) {
            throw new ConfigException("static --kv-event-source is only supported in regular mode");
        }
        if (!PolicyNames.KV_AWARE.equals(c.policy())
                && !(PolicyNames.STICKY_BALANCED.equals(c.policy()) && c.stickyBalancedGroupByKv())) {
            throw new ConfigException("--kv-event-source requires the kv_aware policy");
        }
        Map<String, Source> out = new LinkedHashMap<>();
        for (Map.Entry<String, List<String>> e : events.entrySet()) {
            String worker = e.getKey();
            if (!c.workerUrls().contains(worker)) {
                throw new ConfigException("static KV event source worker '" + worker + "' is not in --worker-urls");
            }
            if (c.kvEventBlockSize() <= 0 || e.getValue().isEmpty()) {
                throw new ConfigException("static KV event source for '" + worker
                        + "' needs a nonzero block size and at least one endpoint");
            }
            List<String> replay = replays.getOrDefault(worker, List.of());
            for (String endpoint : e.getValue()) {
                checkEndpoint(endpoint);
            }
            for (String endpoint : replay) {
                checkEndpoint(endpoint);
            }
            if (!replay.isEmpty() && replay.size() != e.getValue().size()) {
                throw new ConfigException("static KV replay endpoint count for '" + worker
                        + "' must match its event endpoint count");
            }
            out.put(worker, new Source(worker, e.getValue(), replay));
        }
        for (String worker : replays.keySet()) {
            if (!events.containsKey(worker)) {
                throw new ConfigException("--kv-event-replay-source worker '" + worker + "' has no --kv-event-source");
            }
        }
        return out;
    }

    /** {@code --pd-kv-events}: the publishers of prefill workers, without replay endpoints. */
    private static Map<String, Source> prefillSources(RouterConfig c) throws ConfigException {
        if (c.pdKvEvents().isEmpty()) {
            return Map.of();
        }
        Map<String, List<String>> events = endpoints("--pd-kv-events", c.pdKvEvents());
        if (c.pdMode() != PdMode.VLLM) {
            throw new ConfigException("pd_kv_event_sources requires vllm_prefill_decode mode");
        }
        String prefillPolicy = c.prefillPolicy() != null ? c.prefillPolicy() : c.policy();
        if (!PolicyNames.KV_AWARE.equals(prefillPolicy)) {
            throw new ConfigException("pd_kv_event_sources requires a kv_aware prefill policy "
                    + "(other policies never start KV event subscribers)");
        }
        List<String> prefillUrls = c.prefillUrls().stream().filter(Objects::nonNull).map(PrefillUrl::url).toList();
        Map<String, Source> out = new LinkedHashMap<>();
        for (Map.Entry<String, List<String>> e : events.entrySet()) {
            String worker = e.getKey();
            if (!prefillUrls.contains(worker)) {
                throw new ConfigException("pd_kv_event_sources key '" + worker
                        + "' is not a configured prefill URL (use the base URL without the '@rank' suffix)");
            }
            List<String> endpoints = e.getValue().isEmpty() ? List.of("") : e.getValue();
            for (String endpoint : endpoints) {
                if (!isZmqAddress(endpoint)) {
                    throw new ConfigException("pd_kv_event_sources['" + worker + "'] endpoint '" + endpoint
                            + "' must be a reachable ZMQ address (tcp://HOST:PORT or ipc://PATH)");
                }
            }
            for (String endpoint : endpoints) {
                if (endpoint.startsWith(IPC)) {
                    throw new ConfigException("pd_kv_event_sources['" + worker + "'] endpoint '" + endpoint
                            + "': ipc:// is not supported by this router (its ZMQ client cannot reach a Unix socket); "
                            + "use tcp://HOST:PORT");
                }
            }
            out.put(worker, new Source(worker, endpoints, List.of()));
        }
        return out;
    }

    private static boolean isZmqAddress(String endpoint) {
        if (endpoint.startsWith(IPC)) {
            return endpoint.length() > IPC.length();
        }
        Matcher m = TCP.matcher(endpoint);
        if (!m.matches()) {
            return false;
        }
        int port = Integer.parseInt(m.group(2));
        String host = m.group(1);
        return port >= 1 && port <= 65535 && !host.equals("*") && !UNSPECIFIED_HOSTS.contains(host);
    }

    private static Map<String, List<String>> endpoints(String flag, List<String> args) throws ConfigException {
        Map<String, List<String>> out = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new ConfigException(flag + " expects WORKER_URL=ENDPOINT[,ENDPOINT...], got '" + arg + "'");
            }
            String worker = arg.substring(0, eq);
            List<String> list = new ArrayList<>();
            for (String endpoint : arg.substring(eq + 1).split(",")) {
                if (!endpoint.isEmpty()) {
                    list.add(endpoint);
                }
            }
            if (out.put(worker, list) != null) {
                throw new ConfigException("duplicate " + flag + " worker URL '" + worker + "'");
            }
        }
        return out;
    }

    private static void checkEndpoint(String endpoint) throws ConfigException {
        Matcher m = TCP.matcher(endpoint);
        int port = m.matches() ? Integer.parseInt(m.group(2)) : 0;
        if (port < 1 || port > 65535) {
            throw new ConfigException("KV endpoint must be tcp://HOST:PORT without credentials or paths");
        }
        String host = m.group(1);
        if (host.equals("*")) {
            throw new ConfigException("KV connect host cannot be a wildcard");
        }
        if (UNSPECIFIED_HOSTS.contains(host)) {
            throw new ConfigException("KV connect host cannot be unspecified");
        }
    }
}
