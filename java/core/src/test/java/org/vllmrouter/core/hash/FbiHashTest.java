package org.vllmrouter.core.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Vectors computed independently from the algorithm text in upstream-router-spec.md section 3.3 (a
 * separate implementation in another language with arbitrary-precision integers masked to 64 bits).
 */
class FbiHashTest {

    @ParameterizedTest(name = "fbi_hash(\"{0}\")")
    @CsvSource(delimiter = '|', value = {
            "''                                                          | c0663e029346e424 | 6173600 | 4d408de62dee109a",
            "a                                                           | 29d1ab12ec5fea11 | 7695180 | 3d6961c699914c7b",
            "hello                                                       | cf31517d75d7ac16 | 4189030 | 12da78386346a6d1",
            "sess-1                                                      | f082ab0a88e0c931 | 915702  | df48ef2f1c15614a",
            "traj-42                                                     | 7ea6981ec23af8d1 | 5978369 | 182b069adfcfb545",
            "http://127.0.0.1:8000:0                                     | 20ced4ea0e7c9d29 | 7603839 | 1b45783662ba65f0",
            "http://127.0.0.1:8000:159                                   | 35cf243271a4360b | 2078799 | f86d98359a35ab4e",
            "sess-1:http://w1:8000                                       | d1ea4f89195c1525 | 2245869 | d7fbc0aa5356d1de",
            "héllo wörld – ünïcode                                       | c9a614a0c970e881 | 4992774 | 1fc9a6c10da6675a",
            "a somewhat longer key that spans several eight byte blocks! | 69fec351c5249b1c | 2305323 | 3cbd594b564c86e7",
    })
    void matchesIndependentlyComputedVectors(String key, String fbiHex, int bucket, String murmurHex) {
        byte[] utf8 = key.getBytes(StandardCharsets.UTF_8);
        assertEquals(murmurHex, String.format("%016x", FbiHash.murmurHash64A(utf8, 0, utf8.length, 4193360111L)),
                "MurmurHash64A");
        assertEquals(bucket, FbiHash.furcHash(utf8, (1 << 23) - 1), "FurcHash bucket");
        assertEquals(fbiHex, String.format("%016x", FbiHash.hash(key)), "fbi_hash");
    }

    @RepeatedTest(20)
    void sharedPrefixHashingEqualsHashingEachConcatenation(RepetitionInfo rep) {
        long seed = 0xfb1L + rep.getCurrentRepetition();
        SplittableRandom random = new SplittableRandom(seed);
        byte[] prefix = randomBytes(random, random.nextInt(200));
        byte[][] suffixes = new byte[1 + random.nextInt(8)][];
        for (int i = 0; i < suffixes.length; i++) {
            suffixes[i] = randomBytes(random, random.nextInt(3) == 0 ? 20 : random.nextInt(30));
        }
        long[] shared = FbiHash.hashWithSuffixes(prefix, suffixes);
        for (int i = 0; i < suffixes.length; i++) {
            byte[] joined = Arrays.copyOf(prefix, prefix.length + suffixes[i].length);
            System.arraycopy(suffixes[i], 0, joined, prefix.length, suffixes[i].length);
            assertEquals(FbiHash.hash(joined), shared[i], "seed=" + seed + " suffix " + i);
        }
    }

    private static byte[] randomBytes(SplittableRandom random, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) random.nextInt(256);
        }
        return b;
    }

    @Test
    void rendezvousWeightOfTheSpecKeyMatchesTheVector() {
        assertEquals("d1ea4f89195c1525", String.format("%016x", Rendezvous.weight("sess-1", "http://w1:8000")));
    }

    @ParameterizedTest
    @CsvSource({"0", "1"})
    void furcHashOfAtMostOneBucketIsZero(int m) {
        assertEquals(0, FbiHash.furcHash("anything".getBytes(StandardCharsets.UTF_8), m));
    }
}
