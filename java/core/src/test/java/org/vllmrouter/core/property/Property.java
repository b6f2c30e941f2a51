package org.vllmrouter.core.property;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.random.RandomGenerator;
import java.util.random.RandomGeneratorFactory;

/**
 * Checks a property on generated inputs: every edge case of each generator first, then random draws (with the edge
 * cases mixed in now and then) up to the number of tries. The draws come from one generator seeded per run, fresh
 * each run unless the system property {@value #SEED_PROPERTY} gives the seed; a failure names the seed, the try and
 * the inputs, so {@code -D}{@value #SEED_PROPERTY}{@code =<seed>} replays it exactly.
 */
public final class Property {
    public static final String SEED_PROPERTY = "property.seed";
    /** One random input in this many is an edge case instead. */
    static final int EDGE_CASE_ODDS = 20;
    private static final String ALGORITHM = "L64X128MixRandom";

    private Property() {}

    @FunctionalInterface
    public interface Check1<A> {
        void check(A a) throws Exception;
    }

    @FunctionalInterface
    public interface Check2<A, B> {
        void check(A a, B b) throws Exception;
    }

    @FunctionalInterface
    public interface Check3<A, B, C> {
        void check(A a, B b, C c) throws Exception;
    }

    /** The check on the inputs of one try, in the order of their generators. */
    @FunctionalInterface
    interface CheckInputs {
        void check(List<Object> inputs) throws Exception;
    }

    public static <A> void forAll(int tries, Generator<A> a, Check1<A> check) {
        run(seed(), tries, List.of(a), in -> check.check(cast(in.get(0))));
    }

    public static <A, B> void forAll(int tries, Generator<A> a, Generator<B> b, Check2<A, B> check) {
        run(seed(), tries, List.of(a, b), in -> check.check(cast(in.get(0)), cast(in.get(1))));
    }

    public static <A, B, C> void forAll(int tries, Generator<A> a, Generator<B> b, Generator<C> c,
                                        Check3<A, B, C> check) {
        run(seed(), tries, List.of(a, b, c), in -> check.check(cast(in.get(0)), cast(in.get(1)), cast(in.get(2))));
    }

    static void run(long seed, int tries, List<Generator<?>> generators, CheckInputs check) {
        RandomGenerator random = RandomGeneratorFactory.<RandomGenerator>of(ALGORITHM).create(seed);
        int edgeTries = generators.stream().mapToInt(g -> g.edgeCases().size()).max().orElse(0);
        for (int t = 0; t < tries; t++) {
            List<Object> inputs = new ArrayList<>(generators.size());
            for (Generator<?> g : generators) {
                // The first tries walk each generator's edge cases in step; a generator with fewer starts over.
                List<?> edges = g.edgeCases();
                inputs.add(t < edgeTries && !edges.isEmpty()
                        ? edges.get(t % edges.size()) : g.nextMixingEdgeCases(random));
            }
            try {
                check.check(inputs);
            } catch (Exception | AssertionError e) {
                StringBuilder message = new StringBuilder("property failed on try " + (t + 1) + " of " + tries
                        + " with seed " + seed + " (replay: -D" + SEED_PROPERTY + "=" + seed + ")");
                for (int i = 0; i < inputs.size(); i++) {
                    message.append("\n  input ").append(i + 1).append(": ").append(describe(inputs.get(i)));
                }
                message.append("\n  ").append(e);
                throw new AssertionError(message.toString(), e);
            }
        }
    }

    private static long seed() {
        String given = System.getProperty(SEED_PROPERTY);
        return given == null || given.isBlank() ? ThreadLocalRandom.current().nextLong() : Long.parseLong(given.trim());
    }

    /**
     * An input as a reader can retype it: strings quoted with every char outside printable ASCII escaped as a Java
     * unicode escape, byte arrays in hex, lists and maps element by element.
     */
    static String describe(Object input) {
        if (input instanceof String s) {
            StringBuilder out = new StringBuilder("\"");
            for (int i = 0; i < s.length(); i++) {
                char ch = s.charAt(i);
                if (ch == '"' || ch == '\\') {
                    out.append('\\').append(ch);
                } else if (ch >= 0x20 && ch < 0x7f) {
                    out.append(ch);
                } else {
                    out.append(String.format("\\u%04x", (int) ch));
                }
            }
            return out.append('"').toString();
        }
        if (input instanceof byte[] b) {
            return "bytes[" + b.length + "] " + HexFormat.ofDelimiter(" ").formatHex(b);
        }
        if (input instanceof List<?> list) {
            return list.stream().map(Property::describe).toList().toString();
        }
        if (input instanceof Map<?, ?> map) {
            List<String> entries = new ArrayList<>();
            map.forEach((k, v) -> entries.add(describe(k) + "=" + describe(v)));
            return "{" + String.join(", ", entries) + "}";
        }
        return String.valueOf(input);
    }

    @SuppressWarnings("unchecked")
    private static <T> T cast(Object input) {
        return (T) input;
    }
}
