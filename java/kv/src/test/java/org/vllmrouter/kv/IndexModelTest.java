package org.vllmrouter.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;

/**
 * Random stores, removals, clears and restarts from three sources against a plain model of what
 * each source holds (a set of (prompt position, tier) per source); after every step each
 * source's depth, per tier and at-or-faster, must be what the model says.
 */
class IndexModelTest {

    static final CacheIdentity MODEL = new CacheIdentity("m", 2);
    static final int BLOCKS = 6;
    static final int PROMPTS = 3;

    /** Prompt p: BLOCKS blocks, sharing its first p + 1 blocks with prompt 0 (hash = prompt * 100 + block). */
    static int[] prompt(int p) {
        int[] tokens = new int[BLOCKS * 2];
        for (int b = 0; b < BLOCKS; b++) {
            int owner = b <= p ? 0 : p;
            tokens[2 * b] = owner * 1000 + b;
            tokens[2 * b + 1] = owner * 1000 + b + 500;
        }
        return tokens;
    }

    static long hash(int p, int b) {
        return b <= p ? b : p * 100L + b;
    }

    @RepeatedTest(20)
    void depthsMatchAPlainModel(RepetitionInfo run) {
        check(run.getCurrentRepetition(), 0);
    }

    /** The same with 100 other sources registered first, so these three have slots past 64. */
    @RepeatedTest(5)
    void depthsMatchAPlainModelForSourcesPastTheFirst64(RepetitionInfo run) {
        check(1_000 + run.getCurrentRepetition(), 100);
    }

    static void check(long seed, int otherSources) {
        SplittableRandom random = new SplittableRandom(seed);
        KvIndex index = new KvIndex(10_000, new KvMetrics(new PrometheusRegistry()));
        List<SourceClaims> others = new ArrayList<>();
        for (int i = 0; i < otherSources; i++) {
            others.add(index.claims(MODEL, new SourceId("other" + i, 0)));
            others.get(i).stored(null, new long[] {1}, java.util.Arrays.copyOf(prompt(0), 2), null, Tier.ALL[i % 4]);
        }
        List<String> workers = List.of("w0", "w1", "w2");
        List<SourceClaims> sources = new ArrayList<>();
        List<Map<Long, boolean[]>> model = new ArrayList<>();
        for (String w : workers) {
            sources.add(index.claims(MODEL, new SourceId(w, 0)));
            model.add(new HashMap<>());
        }
        for (int step = 0; step < 300; step++) {
            int s = random.nextInt(workers.size());
            SourceClaims claims = sources.get(s);
            Map<Long, boolean[]> held = model.get(s);
            int p = random.nextInt(PROMPTS);
            Tier tier = Tier.ALL[random.nextInt(Tier.ALL.length)];
            int action = random.nextInt(20);
            if (action < 12) {
                int from = random.nextInt(BLOCKS);
                int to = from + 1 + random.nextInt(BLOCKS - from);
                Long parent = from == 0 ? null : hash(p, from - 1);
                if (parent != null && !held.containsKey(parent)) {
                    continue;
                }
                long[] hashes = new long[to - from];
                for (int b = from; b < to; b++) {
                    hashes[b - from] = hash(p, b);
                    held.computeIfAbsent(hash(p, b), h -> new boolean[Tier.ALL.length])[tier.ordinal()] = true;
                }
                int[] tokens = java.util.Arrays.copyOfRange(prompt(p), from * 2, to * 2);
                assertEquals(SourceClaims.StoreOutcome.STORED, claims.stored(parent, hashes, tokens, null, tier));
            } else if (action < 18) {
                long h = hash(p, random.nextInt(BLOCKS));
                claims.removed(new long[] {h}, tier);
                boolean[] tiers = held.get(h);
                if (tiers != null) {
                    tiers[tier.ordinal()] = false;
                    if (!any(tiers)) {
                        held.remove(h);
                    }
                }
            } else {
                if (action == 18) {
                    claims.cleared();
                } else {
                    claims.restart();
                }
                held.clear();
            }
            for (int q = 0; q < PROMPTS; q++) {
                PrefixMatch m = index.match(MODEL, BlockKeys.of(prompt(q), 2, null), workers);
                for (int w = 0; w < workers.size(); w++) {
                    for (Tier t : Tier.ALL) {
                        assertEquals(depth(model.get(w), q, t, false), m.blocks(w, t),
                                "step " + step + " prompt " + q + " worker " + w + " " + t);
                        assertEquals(depth(model.get(w), q, t, true), m.blocksAtOrFaster(w, t),
                                "step " + step + " prompt " + q + " worker " + w + " at or faster than " + t);
                    }
                }
            }
        }
        for (SourceClaims c : sources) {
            c.close();
        }
        for (SourceClaims c : others) {
            c.close();
        }
        assertEquals(0, index.blocks(), "every node is freed once nobody holds anything");
    }

    static int depth(Map<Long, boolean[]> held, int p, Tier tier, boolean orFaster) {
        int d = 0;
        for (int b = 0; b < BLOCKS; b++) {
            boolean[] tiers = held.get(hash(p, b));
            boolean ok = false;
            for (int t = orFaster ? 0 : tier.ordinal(); tiers != null && t <= tier.ordinal(); t++) {
                ok |= tiers[t];
            }
            if (!ok) {
                break;
            }
            d++;
        }
        return d;
    }

    static boolean any(boolean[] tiers) {
        for (boolean b : tiers) {
            if (b) {
                return true;
            }
        }
        return false;
    }
}
