package org.vllmrouter.core.policy;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;
import org.vllmrouter.core.config.PolicyNames;
import org.vllmrouter.core.session.LeastLoaded;
import org.vllmrouter.core.session.SessionStats;
import org.vllmrouter.core.session.SessionTable;
import org.vllmrouter.core.session.Trajectory;
import org.vllmrouter.core.worker.Worker;

/**
 * sticky_balanced: sticky_least_loaded's contract (a session stays on its worker until it is released, idles past the
 * TTL, or its worker stops being a candidate; reservation is atomic; the same session table), with new sessions
 * placed by projected load instead of session count. A worker's projected load is its footprint, the tokens its
 * bound sessions hold (each session weighs its last prompt, which carries the outputs before it, updated on every
 * turn), plus its in-flight prompt tokens. Prompt sizes are estimated from body sizes ({@link
 * RoutingRequest#promptTokens}). A new session goes to the least projected load (rendezvous tie-break, {@link
 * LeastLoaded}), except that one whose group (its id up to the last separator: SkyRL's {@code
 * {instance_id}_{repetition_id}} gives the instance) was last placed on a candidate joins it while that worker's load
 * exceeds the least by at most {@code groupMargin} times the session's own prompt: the group's shared prompt is then
 * prefilled and held once. When the workers' own load is known ({@link #readLiveLoad}), a worker whose engine
 * queues requests is projected heavier in proportion: by {@code 1 + waiting / max(1, running)}, so a queue as long as
 * the running batch doubles it.
 *
 * <p>A bound session moves (besides when its worker stops being a candidate) only when the move pays for itself: when
 * its worker's projected load, without it, exceeds the least loaded candidate's by more than {@code moveMargin} times
 * its context, the tokens the new worker must prefill again, and its worker's engine reports at least {@code
 * moveKvUsage} of its KV cache in use. Late in a rollout batch most sessions have ended and the
 * long ones left are bound wherever the start put them; this lets them leave a crowded worker, whose cache would
 * evict their context between turns anyway. Each move counts as a re-bound session and in the session's worker
 * changes.
 *
 * <p>Footprints live in the session table beside the bindings, so release, expiry, eviction and re-binding keep them
 * right by construction. A table that chooses in a shared store ({@link SessionTable#placesByPolicy()} false: Redis)
 * keeps its own rule, the fewest sessions, and no footprints; the policy then places as sticky_least_loaded does and
 * never moves a session.
 *
 * <p>Two choices are off unless asked for. A tool-call hold ({@code toolHold} above zero) keeps a session's prompt
 * counted in flight on its worker after its turn ends, for that long or until the session's next turn or release: a
 * trajectory that is calling a tool comes back with a longer prompt on the same worker, and a new session placed
 * there meanwhile would take the batch and cache room it is about to need. Holds live in the policy, each with its
 * deadline; a worker's held tokens drop the expired ones when its load is read, and the idle sweep drops the rest, so
 * no timer runs per session. Group by KV ({@code groupByKv}) takes the group's home from the KV-event index: a new
 * session goes to the worker that already holds the most of its prompt while that worker is within the group margin,
 * and the session-id rule decides only when no worker holds any of it.
 */
public final class StickyBalancedPolicy implements LoadBalancingPolicy {
    /**
     * @param groupMargin how far (in multiples of a new session's prompt tokens) its group's worker may be above the
     *     least projected load and still take it; 0: only when it is the least loaded
     * @param groupSeparator a session's group is its id up to the last occurrence of this; empty: no groups
     * @param moveMargin how far (in multiples of a bound session's context) its worker's projected load must exceed the
     *     least one's for the session to move there; 0: never moves
     * @param moveKvUsage moves leave only a worker whose engine reported a KV cache usage (0 to 1) at least this high
     *     in its last fresh sample
     * @param toolHold how long a session's prompt stays counted in flight on its worker after its turn ends, unless
     *     its next turn or its release comes first; zero: no hold
     * @param groupByKv a new session's group home is the worker whose KV cache holds the most of its prompt, as the
     *     KV-event index tells ({@link #usesPrefixResidency}), before the session-id rule
     */
    public record Settings(double groupMargin, String groupSeparator, double moveMargin, double moveKvUsage,
                           Duration toolHold, boolean groupByKv) {
        public static final Settings DEFAULTS = new Settings(1.0, "_", 8.0, 0.5, Duration.ZERO, false);
    }

    /** Known turns between two scans for the least loaded candidate, when no placement has refreshed it. */
    static final int LEAST_RESCAN_TURNS = 256;

    /** Groups remembered (most recently placed first out last): a rollout batch has far fewer. */
    static final int MAX_GROUPS = 1 << 16;

    private static final System.Logger LOG = System.getLogger(StickyBalancedPolicy.class.getName());
    private static final String NO_MODEL_POOL = "";

    private final SessionTable sessions;
    private final Settings settings;
    private final long toolHoldNanos;
    private final LongSupplier nanoClock;
    private final SessionTable.Placement placement = new SessionTable.Placement() {
        @Override
        public Worker place(List<Worker> candidates, String sessionId, long tokens, ToLongFunction<String> tokensOf) {
            return StickyBalancedPolicy.this.place(candidates, sessionId, tokens, tokensOf);
        }

        @Override
        public boolean keeps(Worker current, List<Worker> candidates, String sessionId, long tokens,
                             ToLongFunction<String> tokensOf) {
            return StickyBalancedPolicy.this.keeps(current, candidates, sessionId, tokens, tokensOf);
        }
    };
    /** The least projected load seen at the last scan; read and written only inside the table's atomic step. */
    private long leastSeen;
    private int turnsSinceScan;
    private int candidatesScanned;
    /** Set by {@link #keeps} when it moves a session, so that {@link #place} places it by load alone. */
    private boolean moving;
    private final ConcurrentHashMap<String, InFlight> inFlight = new ConcurrentHashMap<>();
    /** Session id -> the hold of its latest turn (armed when the turn ends); only with a tool-call hold. */
    private final ConcurrentHashMap<String, Hold> holds = new ConcurrentHashMap<>();
    /** Worker URL -> the holds armed on it, in deadline order. */
    private final ConcurrentHashMap<String, Held> held = new ConcurrentHashMap<>();
    private volatile LiveLoad liveLoad = LiveLoad.NONE;
    /** Group -> the URL its last session was placed on. Used only by {@link #place}, which the table serialises. */
    private final Map<String, String> groupWorkers = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
            return size() > MAX_GROUPS;
        }
    };

    public StickyBalancedPolicy(SessionTable sessions, Settings settings) {
        this.sessions = sessions;
        this.settings = settings;
        this.toolHoldNanos = settings.toolHold().toNanos();
        this.nanoClock = sessions.clock();
        if (!sessions.placesByPolicy()) {
            LOG.log(Level.WARNING, "sticky_balanced: this session store chooses new sessions' workers itself (fewest "
                    + "sessions); footprint and group placement need the memory store");
        }
    }

    /** A worker's prompt tokens in flight: added when a request is sent, the mean per request removed as one ends. */
    private static final class InFlight {
        private volatile long tokens;
        private int requests;

        synchronized void add(long t) {
            tokens += t;
            requests++;
        }

        /**
         * The end of a call does not say which request ended, so the mean comes off; the sum is exact whenever the
         * worker has nothing in flight.
         */
        synchronized void remove() {
            if (requests > 0) {
                tokens -= tokens / requests;
                requests--;
            }
        }
    }

    /**
     * A session's turn on one worker: pending while the turn is in flight (its tokens count there as in flight),
     * armed when it ends (they go on counting until the deadline), released by the session's next turn or its end.
     * State changes under the monitor of the worker's {@link Held}.
     */
    private static final class Hold {
        final String url;
        final long tokens;
        long deadline;
        boolean armed;
        boolean released;

        Hold(String url, long tokens) {
            this.url = url;
            this.tokens = tokens;
        }
    }

    /** One worker's armed holds. Every hold lasts as long, so arming order is deadline order. */
    private static final class Held {
        private final ArrayDeque<Hold> byDeadline = new ArrayDeque<>();
        private long tokens;

        synchronized void arm(Hold h, long deadline) {
            if (h.armed || h.released) {
                return;
            }
            h.armed = true;
            h.deadline = deadline;
            byDeadline.add(h);
            tokens += h.tokens;
        }

        synchronized void release(Hold h) {
            if (!h.released) {
                h.released = true;
                if (h.armed) {
                    tokens -= h.tokens;
                }
            }
        }

        /** The tokens held at {@code now}, once the holds that expired by then are dropped. */
        synchronized long tokens(long now) {
            for (Hold h = byDeadline.peek(); h != null && (h.released || h.deadline - now <= 0);
                    h = byDeadline.peek()) {
                byDeadline.poll();
                release(h);
            }
            return tokens;
        }

        /** Whether {@code h} is over (released, or armed and expired) at {@code now}. */
        synchronized boolean over(Hold h, long now) {
            return h.released || (h.armed && h.deadline - now <= 0);
        }
    }

    /** From now on, places with the workers' own load as {@code live} reports it. */
    public void readLiveLoad(LiveLoad live) {
        this.liveLoad = live;
    }

    @Override
    public String name() {
        return PolicyNames.STICKY_BALANCED;
    }

    @Override
    public boolean usesPrefixResidency() {
        return settings.groupByKv();
    }

    @Override
    public Worker select(List<Worker> candidates, RoutingRequest request) {
        if (candidates.isEmpty()) {
            return null;
        }
        long tokens = request.promptTokens();
        String sessionId = request.sessionId();
        if (sessionId == null) {
            Worker chosen = LeastLoaded.tieBreak(sessions.leastLoaded(candidates), request.text());
            inFlightOf(chosen).add(tokens);
            return chosen;
        }
        String pool = request.model() == null ? NO_MODEL_POOL : request.model();
        if (toolHoldNanos > 0) {
            release(holds.remove(sessionId));
        }
        SessionTable.Assignment a = sessions.route(pool, sessionId, candidates, placementFor(request), tokens);
        Worker chosen = a.worker();
        if (toolHoldNanos > 0 && sessions.placesByPolicy()) {
            holds.put(sessionId, new Hold(chosen.url(), tokens));
        }
        if (a.outcome() == SessionTable.Outcome.EXISTING || !sessions.placesByPolicy()) {
            inFlightOf(chosen).add(tokens);
        } else if (LOG.isLoggable(Level.DEBUG)) {
            LOG.log(Level.DEBUG, "sticky_balanced: new session ''{0}'' ({1} prompt tokens) -> replica ''{2}''",
                    sessionId, tokens, chosen.shownUrl());
        }
        return chosen;
    }

    /** The shared placement, or, when the group home comes from KV residency and the route found it, one that sees it. */
    private SessionTable.Placement placementFor(RoutingRequest request) {
        PrefixResidency prefix = request.prefix();
        if (!settings.groupByKv() || prefix == PrefixResidency.UNKNOWN) {
            return placement;
        }
        return new SessionTable.Placement() {
            @Override
            public Worker place(List<Worker> candidates, String sessionId, long tokens,
                                ToLongFunction<String> tokensOf) {
                return StickyBalancedPolicy.this.place(candidates, sessionId, tokens, tokensOf, prefix);
            }

            @Override
            public boolean keeps(Worker current, List<Worker> candidates, String sessionId, long tokens,
                                 ToLongFunction<String> tokensOf) {
                return StickyBalancedPolicy.this.keeps(current, candidates, sessionId, tokens, tokensOf);
            }
        };
    }

    private Worker place(List<Worker> candidates, String sessionId, long tokens, ToLongFunction<String> boundTokens) {
        return place(candidates, sessionId, tokens, boundTokens, PrefixResidency.UNKNOWN);
    }

    /**
     * Inside the table's atomic step: the least projected load, or the group's home within the margin. The home is
     * the candidate holding the most of the prompt ({@code prefix}), else the worker the group was last placed on.
     */
    private Worker place(List<Worker> candidates, String sessionId, long tokens, ToLongFunction<String> boundTokens,
                         PrefixResidency prefix) {
        ToLongFunction<Worker> load = loadOf(boundTokens, holdClock());
        Worker least = LeastLoaded.lightest(candidates, load, sessionId);
        leastSeen = load.applyAsLong(least);
        turnsSinceScan = 0;
        candidatesScanned = candidates.size();
        String group = groupOf(sessionId);
        if (moving) {
            moving = false;
            if (group != null) {
                groupWorkers.put(group, least.url());
            }
            return reserve(least, tokens);
        }
        Worker home = holderOfMost(candidates, prefix);
        if (home == null && group != null) {
            String groupUrl = groupWorkers.get(group);
            home = groupUrl == null ? null : Worker.byUrl(candidates, groupUrl);
        }
        Worker chosen = least;
        if (home != null && home != least
                && load.applyAsLong(home) - load.applyAsLong(least) <= settings.groupMargin() * tokens) {
            chosen = home;
        }
        if (group != null) {
            groupWorkers.put(group, chosen.url());
        }
        return reserve(chosen, tokens);
    }

    /** The candidate whose cache holds the most of the prompt (the first of equals), or null when none holds any. */
    private static Worker holderOfMost(List<Worker> candidates, PrefixResidency prefix) {
        if (prefix == PrefixResidency.UNKNOWN) {
            return null;
        }
        Worker most = null;
        int mostTokens = 0;
        for (Worker w : candidates) {
            int t = prefix.creditedTokens(w);
            if (t > mostTokens) {
                most = w;
                mostTokens = t;
            }
        }
        return most;
    }

    /**
     * A worker's projected load: its bound tokens, its prompt tokens in flight and held, scaled by its engine's queue.
     */
    private ToLongFunction<Worker> loadOf(ToLongFunction<String> boundTokens, long now) {
        LiveLoad live = liveLoad;
        return w -> loadOf(w, live.of(w.baseUrl()), boundTokens, now);
    }

    /** One worker's projected load, given its engine's last fresh sample (null: none) and the hold clock's now. */
    private long loadOf(Worker w, LiveLoad.Sample sample, ToLongFunction<String> boundTokens, long now) {
        return queued(sample, boundTokens.applyAsLong(w.url()) + inFlightTokens(w.url()) + heldTokens(w, now));
    }

    /** The time holds expire against; not read when there are no holds. */
    private long holdClock() {
        return toolHoldNanos > 0 ? nanoClock.getAsLong() : 0;
    }

    /**
     * Inside the table's atomic step, for a bound session's turn: it stays unless its worker's projected load (without
     * it) exceeds the least loaded candidate's by more than {@code moveMargin} times its context, the tokens a move
     * makes the new worker prefill again. The least load is the one seen at the last scan (of a placement or of this)
     * while that rules the move out and the candidates are as many, so a known turn costs one worker's load and a full
     * scan only when a move may pay or {@link #LEAST_RESCAN_TURNS} turns have passed: a worker that has emptied since
     * is seen that much later.
     */
    private boolean keeps(Worker current, List<Worker> candidates, String sessionId, long tokens,
                          ToLongFunction<String> boundTokens) {
        double margin = settings.moveMargin();
        if (!(margin > 0) || candidates.size() < 2) {
            return true;
        }
        LiveLoad.Sample sample = liveLoad.of(current.baseUrl());
        if (!underPressure(sample)) {
            return true;
        }
        // The turn that stays (nearly all) weighs its own worker alone, from the sample it has already read.
        long now = holdClock();
        long here = loadOf(current, sample, boundTokens, now);
        double price = margin * tokens;
        if (here - leastSeen <= price && candidates.size() == candidatesScanned
                && ++turnsSinceScan < LEAST_RESCAN_TURNS) {
            return true;
        }
        ToLongFunction<Worker> load = loadOf(boundTokens, now);
        Worker least = LeastLoaded.lightest(candidates, load, sessionId);
        leastSeen = load.applyAsLong(least);
        turnsSinceScan = 0;
        candidatesScanned = candidates.size();
        if (least == current || here - leastSeen <= price) {
            return true;
        }
        moving = true;
        return false;
    }

    /**
     * Whether a worker's engine says its cache is contended: running requests hold at least {@code moveKvUsage} of
     * it. Below that its idle sessions' contexts stay cached between turns and a move would only trade their hits for
     * re-prefill. A queue alone does not count: with the cache that free, requests wait for the step's token budget
     * or the batch's size (many prompts arriving at once), which drains in a few steps, while a move's re-prefill is
     * paid for good. With no fresh sample nothing says so, and nothing moves.
     */
    private boolean underPressure(LiveLoad.Sample s) {
        return s != null && s.kvCacheUsage() >= settings.moveKvUsage();
    }

    /** A placement's request counts in flight in the same atomic step, so the next placement sees it. */
    private Worker reserve(Worker chosen, long tokens) {
        inFlightOf(chosen).add(tokens);
        return chosen;
    }

    /** A plain read first: computeIfAbsent locks the bin whenever the worker's entry is not its first. */
    private InFlight inFlightOf(Worker w) {
        InFlight f = inFlight.get(w.url());
        return f != null ? f : inFlight.computeIfAbsent(w.url(), url -> new InFlight());
    }

    /** The id up to the last separator, or null when the id has none (or groups are off). */
    String groupOf(String sessionId) {
        String separator = settings.groupSeparator();
        if (separator.isEmpty()) {
            return null;
        }
        int at = sessionId.lastIndexOf(separator);
        return at <= 0 ? null : sessionId.substring(0, at);
    }

    /** {@code tokens} scaled up by the worker's engine queue, when its sample {@code s} (null: none) shows one. */
    private static long queued(LiveLoad.Sample s, long tokens) {
        if (s == null || !(s.waiting() > 0)) {
            return tokens;
        }
        return (long) (tokens * (1 + s.waiting() / Math.max(1, s.running())));
    }

    private long inFlightTokens(String url) {
        InFlight f = inFlight.get(url);
        return f == null ? 0 : f.tokens;
    }

    private long heldTokens(Worker w, long now) {
        if (toolHoldNanos <= 0) {
            return 0;
        }
        Held h = held.get(w.url());
        return h == null ? 0 : h.tokens(now);
    }

    private Held heldOn(String url) {
        return held.computeIfAbsent(url, u -> new Held());
    }

    private void release(Hold h) {
        if (h != null) {
            heldOn(h.url).release(h);
        }
    }

    @Override
    public void onComplete(Worker worker, boolean success) {
        InFlight f = inFlight.get(worker.url());
        if (f != null) {
            f.remove();
        }
    }

    @Override
    public void finishSession(String sessionId) {
        if (toolHoldNanos > 0) {
            release(holds.remove(sessionId));
        }
        int released = sessions.release(sessionId);
        LOG.log(Level.DEBUG, released > 0 ? "sticky_balanced: finished session ''{0}''"
                : "sticky_balanced: finish for unknown session ''{0}''", sessionId);
    }

    @Override
    public boolean keepsSessions() {
        return true;
    }

    @Override
    public void turnEnded(RoutingRequest request, long promptTokens, long cachedTokens) {
        String sessionId = request.sessionId();
        if (sessionId != null && toolHoldNanos > 0) {
            Hold h = holds.get(sessionId);
            if (h != null) {
                heldOn(h.url).arm(h, nanoClock.getAsLong() + toolHoldNanos);
            }
        }
        if (sessionId != null) {
            sessions.turnEnded(request.model() == null ? NO_MODEL_POOL : request.model(), sessionId, promptTokens,
                    cachedTokens);
        }
    }

    @Override
    public Trajectory trajectory(String sessionId) {
        return sessions.trajectory(sessionId);
    }

    /** Also drops the holds that are over, which no load read has dropped (their workers not placed on since). */
    @Override
    public int expireIdle(int maxEntries) {
        if (toolHoldNanos > 0) {
            long now = nanoClock.getAsLong();
            holds.forEach((id, h) -> {
                if (heldOn(h.url).over(h, now) && holds.remove(id, h)) {
                    release(h);
                }
            });
            held.values().forEach(h -> h.tokens(now));
        }
        return sessions.expireIdle(maxEntries);
    }

    @Override
    public SessionStats sessionStats() {
        return sessions.stats();
    }

    public SessionTable sessionTable() {
        return sessions;
    }
}
