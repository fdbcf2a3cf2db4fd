//! Deterministic pseudo-random numbers: splitmix64 for seeding, xoshiro256** for streams.
//!
//! Every random decision in ndd-gen comes from a stream derived from `(seed, tag, index)`,
//! e.g. "the words of document 1234" or "the edits of variant 98". Because no stream is
//! shared between documents, output is byte-identical whatever the thread count or the
//! order in which documents are rendered.

/// One step of splitmix64 (Steele, Lea, Flood 2014): a good 64-bit mixer, used to expand a
/// seed into xoshiro state and to hash stream coordinates.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Stream tags: one per kind of decision, so that e.g. a document's words and its markup
/// are independent even though both are keyed by the same document index.
pub mod tag {
    pub const PLAN: u64 = 1;
    pub const WORDS: u64 = 2;
    pub const EDITS: u64 = 3;
    pub const MARKUP: u64 = 4;
    pub const SITE_OF: u64 = 5;
    pub const SITE: u64 = 6;
    pub const VOCAB: u64 = 7;
    pub const RECORD_ID: u64 = 8;
    pub const CROSS_SITE: u64 = 9;
}

/// xoshiro256** (Blackman & Vigna 2018).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn from_seed(seed: u64) -> Self {
        let mut st = seed;
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
    }

    /// The stream for decision kind `tag` of item `index` under the user's `seed`.
    pub fn stream(seed: u64, tag: u64, index: u64) -> Self {
        let mut st = seed;
        let a = splitmix64(&mut st) ^ tag.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let mut st = a;
        let b = splitmix64(&mut st) ^ index;
        let mut st = b;
        Rng::from_seed(splitmix64(&mut st))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (Lemire's multiply-high; the bias is below 2^-32 for our n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        debug_assert!(lo <= hi);
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // Reference outputs of splitmix64 seeded with 0 (from Vigna's splitmix64.c).
        let mut st = 0u64;
        assert_eq!(splitmix64(&mut st), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut st), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let take = |mut r: Rng| -> Vec<u64> { (0..4).map(|_| r.next_u64()).collect() };
        let a = take(Rng::stream(1, 2, 3));
        assert_eq!(a, take(Rng::stream(1, 2, 3)));
        assert_ne!(a, take(Rng::stream(1, 2, 4)));
        assert_ne!(a, take(Rng::stream(1, 3, 3)));
        assert_ne!(a, take(Rng::stream(2, 2, 3)));
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = Rng::from_seed(7);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10) as usize] += 1;
        }
        for &c in &counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
        let mean: f64 = (0..100_000).map(|_| r.f64()).sum::<f64>() / 100_000.0;
        assert!((mean - 0.5).abs() < 0.01);
    }
}
