package org.vllmrouter.sim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import org.vllmrouter.core.config.ConfigException;
import org.vllmrouter.core.config.RouterConfig;
import org.vllmrouter.core.config.StartEnvironment;
import org.vllmrouter.core.policy.CacheAwarePolicy;
import org.vllmrouter.core.policy.LoadBalancingPolicy;
import org.vllmrouter.core.policy.Policies;
import org.vllmrouter.core.policy.PolicySettings;
import org.vllmrouter.core.policy.PrefixResidency;
import org.vllmrouter.core.policy.RoutingRequest;
import org.vllmrouter.core.policy.StickyBalancedPolicy;
import org.vllmrouter.core.session.Extraction;
import org.vllmrouter.core.session.HeaderLookup;
import org.vllmrouter.core.session.InMemorySessionTable;
import org.vllmrouter.core.settings.RouterSettings;
import org.vllmrouter.core.settings.SessionSettings;
import org.vllmrouter.core.worker.Worker;
import org.vllmrouter.mock.rollout.EngineModel;
import org.vllmrouter.mock.rollout.EngineRequest;
import org.vllmrouter.mock.rollout.Pressure;
import org.vllmrouter.mock.rollout.PromptContent;
import org.vllmrouter.mock.rollout.Trajectory;
import org.vllmrouter.mock.rollout.Turn;

/**
 * One policy against one workload at one pressure, as a discrete-event loop in virtual time: the engine's own policy
 * object (built by {@link Policies#create}, its sessions on the virtual clock) picks a worker for every turn, exactly
 * as the router's route would call it, and each worker is an {@link EngineModel} stepped at its own pace. No socket,
 * no thread: the policy's background chores (idle-session expiry, cache_aware's tree eviction) run as events at
 * their configured intervals.
 *
 * <p>The router's side is kept as the server keeps it: a worker's load is its in-flight turns, a turn's session id
 * comes from its {@code X-Session-ID} header, its body's size is what a real body of its prompt tokens would be, kv_aware is told each worker's cached prefix of the prompt (what the
 * workers' KV events would have reported, here without delay), sticky_balanced reads each engine's waiting, running
 * and KV-usage gauges as the router's scraper gives them (read once a second, {@link ScrapedLoad}), and a
 * trajectory's session is released when it ends, as SkyRL's {@code finally} does.
 */
public final class RolloutSimulation {
    private static final String WORKER_URL = "http://sim-worker-%d:8000";

    private enum Kind { ARRIVAL, STEP_END, CHORES, SCRAPE }

    private record Event(double time, long order, Kind kind, int index) implements Comparable<Event> {
        @Override
        public int compareTo(Event o) {
            int byTime = Double.compare(time, o.time);
            return byTime != 0 ? byTime : Long.compare(order, o.order);
        }
    }

    private static final class Run {
        final int index;
        final Trajectory trajectory;
        final long[] hashes;
        final EngineRequest.ComputeHistory history = new EngineRequest.ComputeHistory();
        int turn;
        double start = Double.NaN;
        double end;
        /** The current turn's times: its arrival, its first step, its first output token. */
        double arrived;
        double scheduled;
        double firstToken;
        /** The current turn's request, as the policy placed it: its first-token and end-of-turn hooks take it. */
        RoutingRequest request;
        final List<Integer> workersVisited = new ArrayList<>();
        int lastWorker = -1;
        int turnsSent;
        long promptTokens;
        long cachedTokens;
        double queueWait;
        double prefill;
        double decode;
        int preemptions;
        int workerChanges;
        int errors;

        Run(int index, Trajectory trajectory, long[] hashes) {
            this.index = index;
            this.trajectory = trajectory;
            this.hashes = hashes;
        }
    }

    private final PreparedWorkload prepared;
    private final String policyName;
    private final Pressure pressure;
    private final List<Worker> workers = new ArrayList<>();
    private final Map<Worker, Integer> workerIndex = new IdentityHashMap<>();
    private final EngineModel[] engines;
    private final boolean[] stepping;
    /** Per worker, the requests its running step computes for. */
    private final List<List<EngineRequest>> inStep = new ArrayList<>();
    /** Every worker's prefix cache in one index, for a policy that is told each worker's cached prefix. */
    private final PrefixHolders holders;
    private final int[] credited;
    private final int blocksPerWorker;
    private final LoadBalancingPolicy policy;
    private final int choresIntervalSecs;
    /** The workers' gauges, for a policy that reads them (sticky_balanced); null for the others. */
    private final ScrapedLoad scraped;
    private final PriorityQueue<Event> events = new PriorityQueue<>();
    private final List<Run> runs = new ArrayList<>();
    private final List<Double> turnLatencies = new ArrayList<>();
    private long order;
    private double now;
    private int open;
    private long turns;
    private long errors;

    public RolloutSimulation(PreparedWorkload prepared, String policyName, int workerCount, Pressure pressure) {
        this(prepared, policyName, workerCount, pressure, StickyBalancedPolicy.Settings.DEFAULTS);
    }

    /** With sticky_balanced's settings {@code stickyBalanced} instead of its defaults. */
    public RolloutSimulation(PreparedWorkload prepared, String policyName, int workerCount, Pressure pressure,
                             StickyBalancedPolicy.Settings stickyBalanced) {
        if (workerCount <= 0) {
            throw new IllegalArgumentException("workers must be > 0, got " + workerCount);
        }
        this.prepared = prepared;
        this.policyName = policyName;
        this.pressure = pressure;
        this.blocksPerWorker = pressure.blocksPerWorker(prepared.workload(), workerCount, prepared.costs());
        this.engines = new EngineModel[workerCount];
        this.stepping = new boolean[workerCount];
        this.choresIntervalSecs = RouterConfig.defaults().evictionIntervalSecs();
        if (OraclePolicy.NAME.equals(policyName)) {
            this.policy = new OraclePolicy(prepared.workload().trajectories(), workerCount, prepared.costs());
        } else {
            RouterSettings settings = defaultSettings();
            SessionSettings sessions = settings.sessions();
            this.policy = Policies.create(policyName,
                    withoutBackgroundEviction(settings.policies()).withStickyBalanced(stickyBalanced),
                    () -> new InMemorySessionTable(sessions.ttl(), sessions.maxSessions(), this::nanoTime));
        }
        this.holders = policy.usesPrefixResidency() ? new PrefixHolders(workerCount, prepared.costs().blockSize())
                : null;
        this.credited = new int[workerCount];
        for (int i = 0; i < workerCount; i++) {
            Worker w = Worker.builder(String.format(WORKER_URL, i)).build();
            workers.add(w);
            workerIndex.put(w, i);
            engines[i] = holders == null ? new EngineModel(prepared.costs(), blocksPerWorker)
                    : new EngineModel(prepared.costs(), blocksPerWorker, holders.listenerFor(i));
            inStep.add(new ArrayList<>());
        }
        this.scraped = policy instanceof StickyBalancedPolicy ? new ScrapedLoad(workers, engines) : null;
        if (scraped != null) {
            ((StickyBalancedPolicy) policy).readLiveLoad(scraped);
        }
    }

    /** The default settings, with the session TTL from this process's environment, as a router takes it. */
    private static RouterSettings defaultSettings() {
        try {
            return RouterSettings.of(RouterConfig.defaults(), StartEnvironment.current());
        } catch (ConfigException e) {
            throw new IllegalStateException("the default configuration was refused: " + e.getMessage(), e);
        }
    }

    /**
     * {@code p} with cache_aware's eviction left to the loop's chores event: the interval is cleared after validation,
     * since a router refuses 0 for cache_aware and the simulator's background is its own event loop.
     */
    private static PolicySettings withoutBackgroundEviction(PolicySettings p) {
        CacheAwarePolicy.Settings c = p.cacheAware();
        return p.withCacheAware(new CacheAwarePolicy.Settings(c.cacheThreshold(), c.balanceAbsThreshold(),
                c.balanceRelThreshold(), 0, c.maxTreeSize()));
    }

    private long nanoTime() {
        return (long) (now * 1e9);
    }

    /** Runs the batch to its end; an instance runs once. */
    public SimulationResult run() {
        if (!runs.isEmpty()) {
            throw new IllegalStateException("a simulation runs once");
        }
        List<Trajectory> trajectories = prepared.workload().trajectories();
        for (int i = 0; i < trajectories.size(); i++) {
            Run run = new Run(i, trajectories.get(i), prepared.blockHashes().get(i));
            runs.add(run);
            schedule(run.trajectory.turns().get(0).delaySeconds(), Kind.ARRIVAL, i);
        }
        open = runs.size();
        if (choresIntervalSecs > 0) {
            schedule(choresIntervalSecs, Kind.CHORES, 0);
        }
        if (scraped != null) {
            scrape();
        }
        try {
            while (!events.isEmpty()) {
                Event e = events.poll();
                now = e.time();
                switch (e.kind()) {
                    case ARRIVAL -> arrive(e.index());
                    case STEP_END -> endStep(e.index());
                    case CHORES -> chores();
                    case SCRAPE -> scrape();
                }
            }
        } finally {
            policy.close();
        }
        return result();
    }

    private void schedule(double time, Kind kind, int index) {
        events.add(new Event(time, order++, kind, index));
    }

    private void arrive(int runIndex) {
        Run run = runs.get(runIndex);
        Trajectory t = run.trajectory;
        Turn turn = t.turns().get(run.turn);
        if (run.turn == 0) {
            run.start = now;
        }
        turns++;
        run.turnsSent++;
        RoutingRequest request = RoutingRequest.of(new Extraction(t.sessionId(), null, null),
                HeaderLookup.of(Map.of("x-session-id", t.sessionId())),
                () -> PromptContent.text(t, turn.promptTokens()),
                // The size a real body of this many tokens has, so the router's estimate reads them back.
                (long) turn.promptTokens() * RoutingRequest.BODY_BYTES_PER_TOKEN);
        if (policy.usesPrefixResidency()) {
            request.withPrefix(residency(run.hashes, turn.promptTokens()));
        }
        Worker chosen = policy.select(workers, request);
        if (chosen == null) {
            errors++;
            run.errors++;
            end(run);
            return;
        }
        int w = workerIndex.get(chosen);
        visit(run, w);
        run.request = request;
        chosen.incrementLoad();
        if (!engines[w].submit(new EngineRequest(run.hashes, turn.promptTokens(), turn.outputTokens(), run.history,
                run))) {
            chosen.decrementLoad();
            policy.answerStarted(chosen, request);
            policy.onComplete(chosen, false);
            errors++;
            run.errors++;
            end(run);
            return;
        }
        run.arrived = now;
        run.scheduled = Double.NaN;
        run.firstToken = Double.NaN;
        if (!stepping[w]) {
            step(w);
        }
    }

    private static void visit(Run run, int w) {
        if (w != run.lastWorker) {
            if (run.lastWorker >= 0) {
                run.workerChanges++;
            }
            run.workersVisited.add(w);
            run.lastWorker = w;
        }
    }

    /** Every worker's cached prefix of the prompt, worked out for all of them at the first worker asked about. */
    private PrefixResidency residency(long[] hashes, int promptTokens) {
        return new PrefixResidency() {
            private boolean known;

            @Override
            public int inputTokens() {
                return promptTokens;
            }

            @Override
            public int creditedTokens(Worker worker) {
                if (!known) {
                    holders.cachedPrefixTokens(hashes, promptTokens, credited);
                    known = true;
                }
                return credited[workerIndex.get(worker)];
            }

            @Override
            public int heldBlocks(Worker worker) {
                return engines[workerIndex.get(worker)].registeredBlocks();
            }
        };
    }

    private void step(int w) {
        stepping[w] = true;
        double seconds = engines[w].startStep();
        List<EngineRequest> computing = inStep.get(w);
        engines[w].forEachScheduled(r -> {
            computing.add(r);
            Run run = (Run) r.tag();
            if (Double.isNaN(run.scheduled)) {
                run.scheduled = now;
            }
        });
        schedule(now + seconds, Kind.STEP_END, w);
    }

    private void endStep(int w) {
        Worker worker = workers.get(w);
        List<EngineRequest> finished = engines[w].finishStep();
        List<EngineRequest> computing = inStep.get(w);
        for (EngineRequest r : computing) {
            Run run = (Run) r.tag();
            if (Double.isNaN(run.firstToken) && r.generated() > 0) {
                run.firstToken = now;
                policy.answerStarted(worker, run.request);
            }
        }
        computing.clear();
        for (EngineRequest done : finished) {
            Run run = (Run) done.tag();
            Turn turn = run.trajectory.turns().get(run.turn);
            run.promptTokens += done.promptTokens();
            run.cachedTokens += done.hitTokens();
            run.queueWait += run.scheduled - run.arrived;
            run.prefill += run.firstToken - run.scheduled;
            run.decode += now - run.firstToken;
            turnLatencies.add(now - run.arrived);
            run.preemptions += done.preemptions();
            worker.decrementLoad();
            policy.onComplete(worker, !turn.abandoned());
            if (policy.keepsSessions()) {
                // As the live router's proxy does when a session's answer ends: the call first, then the turn.
                policy.turnEnded(run.request, done.promptTokens(), done.hitTokens());
            }
            run.turn++;
            if (run.turn == run.trajectory.turns().size()) {
                end(run);
            } else {
                schedule(now + run.trajectory.turns().get(run.turn).delaySeconds(), Kind.ARRIVAL, run.index);
            }
        }
        stepping[w] = false;
        if (engines[w].hasWork()) {
            step(w);
        }
    }

    private void end(Run run) {
        run.end = now;
        open--;
        policy.finishSession(run.trajectory.sessionId());
    }

    private void chores() {
        policy.expireIdle(Integer.MAX_VALUE);
        if (policy instanceof CacheAwarePolicy cacheAware) {
            cacheAware.evictNow();
        }
        if (open > 0) {
            schedule(now + choresIntervalSecs, Kind.CHORES, 0);
        }
    }

    private void scrape() {
        scraped.refresh();
        if (open > 0) {
            schedule(now + ScrapedLoad.INTERVAL_SECONDS, Kind.SCRAPE, 0);
        }
    }

    /** Every trajectory of the run, in the workload's order; after {@link #run()}. */
    public List<TrajectoryRecord> trajectories() {
        List<TrajectoryRecord> records = new ArrayList<>(runs.size());
        for (Run r : runs) {
            records.add(new TrajectoryRecord(policyName, pressure.name(), r.trajectory.sessionId(),
                    r.trajectory.group(), List.copyOf(r.workersVisited), r.turnsSent, r.promptTokens, r.cachedTokens,
                    r.queueWait, r.prefill, r.decode, r.preemptions, r.workerChanges, r.end - r.start, r.errors));
        }
        return records;
    }

    private SimulationResult result() {
        double makespan = 0;
        double[] trajectoryLatency = new double[runs.size()];
        Map<String, double[]> groupSpan = new HashMap<>();
        for (int i = 0; i < runs.size(); i++) {
            Run run = runs.get(i);
            makespan = Math.max(makespan, run.end);
            trajectoryLatency[i] = run.end - run.start;
            double[] span = groupSpan.computeIfAbsent(run.trajectory.group(),
                    g -> new double[] {Double.POSITIVE_INFINITY, 0});
            span[0] = Math.min(span[0], run.start);
            span[1] = Math.max(span[1], run.end);
        }
        double[] groupLatency = groupSpan.values().stream().mapToDouble(s -> s[1] - s[0]).toArray();
        long prompt = 0;
        long hits = 0;
        long recomputed = 0;
        long preemptions = 0;
        double busiest = 0;
        double busy = 0;
        for (EngineModel e : engines) {
            prompt += e.promptTokens();
            hits += e.hitTokens();
            recomputed += e.recomputedTokens();
            preemptions += e.preemptions();
            busiest = Math.max(busiest, e.busySeconds());
            busy += e.busySeconds();
        }
        double meanBusy = busy / engines.length;
        Percentiles groups = new Percentiles(groupLatency);
        Percentiles trajectories = new Percentiles(trajectoryLatency);
        Percentiles turnLatency = new Percentiles(turnLatencies.stream().mapToDouble(Double::doubleValue).toArray());
        return new SimulationResult(policyName, pressure.name(), engines.length, blocksPerWorker, makespan,
                groups.at(50), groups.at(90), groups.max(), trajectories.at(50), trajectories.at(90),
                turnLatency.at(50), turnLatency.at(90),
                prompt == 0 ? 0 : (double) hits / prompt, recomputed, meanBusy == 0 ? 0 : busiest / meanBusy,
                preemptions, turns, errors,
                Arrays.stream(groupLatency).boxed().toList());
    }
}
