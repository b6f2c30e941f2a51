package org.vllmrouter.mock.rollout;

/** SplitMix64's finaliser: derives independent seeds and token identities from a few integers. */
final class Mixing {
    private Mixing() {
    }

    static long mix(long x) {
        x = (x ^ (x >>> 30)) * 0xbf58476d1ce4e5b9L;
        x = (x ^ (x >>> 27)) * 0x94d049bb133111ebL;
        return x ^ (x >>> 31);
    }

    static long mix(long a, long b, long c) {
        return mix(mix(mix(a) ^ b) ^ c);
    }

    static long mix(long a, long b) {
        return mix(mix(a) ^ b);
    }
}
