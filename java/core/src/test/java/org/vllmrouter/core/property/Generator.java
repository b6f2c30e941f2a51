package org.vllmrouter.core.property;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.random.RandomGenerator;

/**
 * Test inputs of one kind, drawn from the run's seeded {@link RandomGenerator}, and the edge cases of that kind: values
 * a random draw would seldom hit (empty, boundaries, escapes, lone surrogates) that {@link Property} tries on purpose.
 * Sizes and lengths lean towards the short end, where most edge cases live, and still reach the stated maximum.
 */
public final class Generator<T> {
    public static final String ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    /** Draws before {@link #filter} gives up: a filter that rejects nearly everything is a mistake in the test. */
    private static final int FILTER_ATTEMPTS = 10_000;

    private final Function<RandomGenerator, T> draw;
    private final List<T> edgeCases;

    private Generator(Function<RandomGenerator, T> draw, List<T> edgeCases) {
        this.draw = draw;
        this.edgeCases = Collections.unmodifiableList(new ArrayList<>(edgeCases));
    }

    /** Values drawn by {@code draw}, with no edge cases of their own. */
    public static <T> Generator<T> of(Function<RandomGenerator, T> draw) {
        return new Generator<>(draw, List.of());
    }

    /** Always {@code value}, which may be null. */
    public static <T> Generator<T> constant(T value) {
        return new Generator<>(random -> value, Collections.singletonList(value));
    }

    /** One of {@code values}, each as likely. */
    public static <T> Generator<T> elements(List<T> values) {
        List<T> copy = List.copyOf(values);
        return of(random -> copy.get(random.nextInt(copy.size())));
    }

    @SafeVarargs
    public static <T> Generator<T> elements(T... values) {
        return elements(Arrays.asList(values));
    }

    /** A value of one of {@code generators}, each as likely; the edge cases are all of theirs. */
    @SafeVarargs
    public static <T> Generator<T> oneOf(Generator<? extends T>... generators) {
        List<Generator<? extends T>> choices = List.of(generators);
        List<T> edges = new ArrayList<>();
        choices.forEach(g -> edges.addAll(g.edgeCases));
        return new Generator<>(random -> choices.get(random.nextInt(choices.size())).next(random), edges);
    }

    /** {@code f} of a value of each generator (each mixing in its edge cases); no edge cases of its own. */
    public static <A, B, R> Generator<R> combine(Generator<A> a, Generator<B> b, BiFunction<A, B, R> f) {
        return of(random -> f.apply(a.nextMixingEdgeCases(random), b.nextMixingEdgeCases(random)));
    }

    public static Generator<Boolean> booleans() {
        return new Generator<>(RandomGenerator::nextBoolean, List.of(false, true));
    }

    /** Integers in [min, max], often small ones; edge cases: both bounds and -1, 0, 1 where in range. */
    public static Generator<Integer> ints(int min, int max) {
        if (min > max) {
            throw new IllegalArgumentException("empty range [" + min + ", " + max + "]");
        }
        int smallMin = (int) Math.max(min, -100L);
        int smallMax = (int) Math.min(max, 100L);
        boolean hasSmall = smallMin <= smallMax;
        List<Integer> edges = new ArrayList<>(List.of(min, max));
        for (int near : new int[] {-1, 0, 1}) {
            if (near > min && near < max) {
                edges.add(near);
            }
        }
        return new Generator<>(random -> hasSmall && random.nextInt(4) == 0
                ? (int) random.nextLong(smallMin, smallMax + 1L)
                : (int) random.nextLong(min, max + 1L), edges.stream().distinct().toList());
    }

    /**
     * Finite doubles of every magnitude (every bit pattern is as likely), small ones and whole-numbered ones; edge
     * cases: zeros of both signs, ±1, the smallest and largest magnitudes.
     */
    public static Generator<Double> finiteDoubles() {
        return new Generator<>(random -> switch (random.nextInt(3)) {
            case 0 -> (double) random.nextInt(-1000, 1001);
            case 1 -> random.nextDouble(-1000, 1000);
            default -> {
                double d;
                do {
                    d = Double.longBitsToDouble(random.nextLong());
                } while (!Double.isFinite(d));
                yield d;
            }
        }, List.of(0.0, -0.0, 1.0, -1.0, 0.5, Double.MIN_VALUE, Double.MAX_VALUE, -Double.MAX_VALUE));
    }

    /** Byte arrays of up to {@code maxLength} bytes of any value; edge cases: empty, a zero byte, a 0xff byte. */
    public static Generator<byte[]> byteArrays(int maxLength) {
        return new Generator<>(random -> {
            byte[] b = new byte[size(random, 0, maxLength)];
            random.nextBytes(b);
            return b;
        }, List.of(new byte[0], new byte[] {0}, new byte[] {(byte) 0xff}));
    }

    /** Strings of {@code minLength} to {@code maxLength} characters from {@code alphabet}; edge case: the shortest. */
    public static Generator<String> strings(String alphabet, int minLength, int maxLength) {
        Generator<String> strings = of(random -> {
            StringBuilder s = new StringBuilder();
            for (int n = size(random, minLength, maxLength); n > 0; n--) {
                s.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            return s.toString();
        });
        return minLength == 0 ? strings.withEdgeCases("") : strings;
    }

    /**
     * Any UTF-16 text of up to {@code maxLength} chars. Each string is drawn from one of three mixes, so long strings
     * of each kind occur: any char value, each as likely (control characters and lone surrogates are then rare);
     * printable ASCII only; or a mix heavy in control characters, lone surrogates of either half and non-ASCII letters.
     * Paired surrogates occur in every mix. Edge cases: empty, the characters JSON escapes or HTTP stops at, lone and paired
     * surrogates, non-ASCII letters, and a run of the full length.
     */
    public static Generator<String> anyText(int maxLength) {
        List<String> edges = new ArrayList<>(List.of("", " ", "\u0000", "\"", "\\", "\n", "\r\n", "\t", "\u007f",
                "\u2028", "\ufeff", "\uffff", "é", "日本", "\ud800", "\udfff", "\udc00\ud800", "\ud834\udd1e",
                "a\u0000b"));
        edges.removeIf(s -> s.length() > maxLength);
        edges.add("a".repeat(maxLength));
        return new Generator<>(random -> {
            int mix = random.nextInt(3);
            StringBuilder s = new StringBuilder();
            int length = size(random, 0, maxLength);
            while (s.length() < length) {
                if (length - s.length() >= 2 && random.nextInt(20) == 0) {
                    s.appendCodePoint(
                            random.nextInt(Character.MIN_SUPPLEMENTARY_CODE_POINT, Character.MAX_CODE_POINT + 1));
                } else {
                    s.append((char) switch (mix) {
                        case 0 -> random.nextInt(Character.MAX_VALUE + 1);
                        case 1 -> random.nextInt(0x20, 0x7f);
                        default -> unusualChar(random);
                    });
                }
            }
            return s.toString();
        }, edges.stream().distinct().toList());
    }

    /** A control character, a lone surrogate, a two-byte UTF-8 character or printable ASCII. */
    private static int unusualChar(RandomGenerator random) {
        return switch (random.nextInt(4)) {
            case 0 -> random.nextBoolean() ? random.nextInt(0x20) : random.nextInt(0x7f, 0xa0);
            case 1 -> random.nextInt(Character.MIN_SURROGATE, Character.MAX_SURROGATE + 1);
            case 2 -> random.nextInt(0xa0, 0x800);
            default -> random.nextInt(0x20, 0x7f);
        };
    }

    /** A size in [min, max]: half the time within eight of {@code min}, otherwise anywhere. */
    private static int size(RandomGenerator random, int min, int max) {
        int upper = random.nextBoolean() ? Math.min(max, min + 8) : max;
        return random.nextInt(min, upper + 1);
    }

    public T next(RandomGenerator random) {
        return draw.apply(random);
    }

    /** The values {@link Property} tries first, then mixes in among random ones. */
    public List<T> edgeCases() {
        return edgeCases;
    }

    /** This generator with {@code more} edge cases after its own. */
    @SafeVarargs
    public final Generator<T> withEdgeCases(T... more) {
        return withEdgeCases(Arrays.asList(more));
    }

    public Generator<T> withEdgeCases(List<? extends T> more) {
        List<T> edges = new ArrayList<>(edgeCases);
        edges.addAll(more);
        return new Generator<>(draw, edges);
    }

    public <R> Generator<R> map(Function<? super T, ? extends R> f) {
        List<R> edges = new ArrayList<>();
        edgeCases.forEach(e -> edges.add(f.apply(e)));
        return new Generator<>(random -> f.apply(next(random)), edges);
    }

    /** Only values {@code keep} accepts, edge cases included. */
    public Generator<T> filter(Predicate<? super T> keep) {
        return new Generator<>(random -> {
            for (int i = 0; i < FILTER_ATTEMPTS; i++) {
                T value = next(random);
                if (keep.test(value)) {
                    return value;
                }
            }
            throw new IllegalStateException("the filter rejected " + FILTER_ATTEMPTS + " values in a row");
        }, edgeCases.stream().filter(keep).toList());
    }

    /**
     * Lists of {@code minSize} to {@code maxSize} values of this generator, which mixes in its edge cases; edge cases:
     * the empty list (when allowed) and each edge case alone.
     */
    public Generator<List<T>> lists(int minSize, int maxSize) {
        List<List<T>> edges = new ArrayList<>();
        if (minSize == 0) {
            edges.add(List.of());
        }
        if (minSize <= 1 && maxSize >= 1) {
            edgeCases.forEach(e -> edges.add(Collections.singletonList(e)));
        }
        return new Generator<>(random -> {
            List<T> list = new ArrayList<>();
            for (int n = size(random, minSize, maxSize); n > 0; n--) {
                list.add(nextMixingEdgeCases(random));
            }
            return Collections.unmodifiableList(list);
        }, edges);
    }

    /** A random value, or now and then one of the edge cases. */
    T nextMixingEdgeCases(RandomGenerator random) {
        return !edgeCases.isEmpty() && random.nextInt(Property.EDGE_CASE_ODDS) == 0
                ? edgeCases.get(random.nextInt(edgeCases.size()))
                : next(random);
    }
}
