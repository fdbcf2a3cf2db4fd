//! Charikar's simhash over the word tokens of a canonical text (format-spec/fingerprints.md,
//! §8): 64 bits (Manku et al.) and 384 bits (Henzinger's evaluation).
//!
//! Every token occurrence adds +1 to coordinate i when bit i of its hash is set and -1 when
//! not, so a word's weight is its term frequency; bit i of the simhash is 1 iff coordinate i
//! ends strictly positive (ties give 0). With c_i = occurrences whose hash has bit i set and
//! N = all occurrences, that is 2·c_i > N, which is how it is computed: counting set bits.

use super::hash::{self, SEED_SIMHASH384};

/// spread[b]: byte k = bit k of b. Adding spread[byte j of h] to an 8-lane byte counter
/// counts 8 bits of h with one addition.
const SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            t[b] |= (((b >> k) & 1) as u64) << (8 * k);
            k += 1;
        }
        b += 1;
    }
    t
};

/// Counts, per bit position, how many added hashes have that bit set.
#[derive(Clone, Debug)]
pub struct Accumulator {
    /// lanes[j], byte k: pending count of bit 8j + k (at most 255 before a flush).
    lanes: [u64; 8],
    pending: u32,
    counts: [u64; 64],
    total: u64,
}

impl Default for Accumulator {
    fn default() -> Self {
        Self::new()
    }
}

impl Accumulator {
    pub fn new() -> Self {
        Accumulator {
            lanes: [0; 8],
            pending: 0,
            counts: [0; 64],
            total: 0,
        }
    }

    /// Adds one token occurrence with hash `h`.
    #[inline]
    pub fn add(&mut self, h: u64) {
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            *lane += SPREAD[((h >> (8 * j)) & 0xFF) as usize];
        }
        self.pending += 1;
        self.total += 1;
        if self.pending == 255 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            for k in 0..8 {
                self.counts[8 * j + k] += (*lane >> (8 * k)) & 0xFF;
            }
            *lane = 0;
        }
        self.pending = 0;
    }

    /// The simhash: bit i set iff 2·count_i > total. No tokens give 0.
    pub fn finish(mut self) -> u64 {
        self.flush();
        let mut fp = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            if 2 * c > self.total {
                fp |= 1 << i;
            }
        }
        fp
    }
}

/// The simhash of the token hashes `hs` (the value of an [`Accumulator`] they are added to),
/// counted sixteen tokens at a time: a carry-save adder tree (Harley and Seal's, as in
/// positional population counts) keeps each bit position's count in bit planes (ones, twos,
/// fours, eights: five operations per token), and only its carry out, one word per sixteen
/// tokens, is added to an [`Accumulator`] (in units of sixteen). About eight instructions a
/// token where the accumulator alone takes ~45. Pinned by `of_hashes_equals_the_accumulator`.
pub fn of_hashes(hs: &[u64]) -> u64 {
    // Carry-save adder: (high, low) bits of a + b + c, per bit position.
    #[inline(always)]
    fn csa(a: u64, b: u64, c: u64) -> (u64, u64) {
        let u = a ^ b;
        ((a & b) | (u & c), u ^ c)
    }
    let (mut ones, mut twos, mut fours, mut eights) = (0u64, 0u64, 0u64, 0u64);
    // The carries out of the planes, each worth sixteen tokens, counted per bit position by
    // the accumulator's byte lanes (its `total` is not used).
    let mut sixteens_acc = Accumulator::new();
    let mut blocks = hs.chunks_exact(16);
    for b in &mut blocks {
        let b: &[u64; 16] = b.try_into().expect("chunks of 16");
        let (twos_a, o) = csa(ones, b[0], b[1]);
        let (twos_b, o) = csa(o, b[2], b[3]);
        let (fours_a, t) = csa(twos, twos_a, twos_b);
        let (twos_a, o) = csa(o, b[4], b[5]);
        let (twos_b, o) = csa(o, b[6], b[7]);
        let (fours_b, t) = csa(t, twos_a, twos_b);
        let (eights_a, f) = csa(fours, fours_a, fours_b);
        let (twos_a, o) = csa(o, b[8], b[9]);
        let (twos_b, o) = csa(o, b[10], b[11]);
        let (fours_a, t) = csa(t, twos_a, twos_b);
        let (twos_a, o) = csa(o, b[12], b[13]);
        let (twos_b, o) = csa(o, b[14], b[15]);
        let (fours_b, t) = csa(t, twos_a, twos_b);
        let (eights_b, f) = csa(f, fours_a, fours_b);
        let (sixteens, e) = csa(eights, eights_a, eights_b);
        (ones, twos, fours, eights) = (o, t, f, e);
        sixteens_acc.add(sixteens);
    }
    // The last (fewer than sixteen) tokens, one at a time: a ripple carry through the planes.
    for &h in blocks.remainder() {
        let mut carry = h;
        for plane in [&mut ones, &mut twos, &mut fours, &mut eights] {
            let c = *plane & carry;
            *plane ^= carry;
            carry = c;
        }
        sixteens_acc.add(carry);
    }
    sixteens_acc.flush();
    let total = hs.len() as u64;
    let mut fp = 0u64;
    for (i, &c) in sixteens_acc.counts.iter().enumerate() {
        let low = ((ones >> i) & 1)
            + 2 * ((twos >> i) & 1)
            + 4 * ((fours >> i) & 1)
            + 8 * ((eights >> i) & 1);
        if 2 * (16 * c + low) > total {
            fp |= 1 << i;
        }
    }
    fp
}

/// 64-bit simhash of a canonical text; token hash = the word hash (`hash::word_hash`), the
/// same value `fingerprint` computes once per word.
pub fn simhash(text: &str) -> u64 {
    let mut acc = Accumulator::new();
    for w in super::words(text) {
        acc.add(hash::word_hash(w));
    }
    acc.finish()
}

/// Simhash of a feature set with weight 1 per distinct feature (format-spec/fingerprints.md
/// §8.2): the token hash of a feature is the feature itself (a shingle hash, already a
/// uniform 64-bit value). `keep` decides which features count (the boilerplate filter).
pub fn simhash_of_set(features: &[u64], keep: impl Fn(u64) -> bool) -> u64 {
    let mut acc = Accumulator::new();
    for &f in features {
        if keep(f) {
            acc.add(f);
        }
    }
    acc.finish()
}

/// The SIM384 table's value of a 384-bit simhash: its six parts, u64 LE each (48 bytes).
pub fn encode_sim384(s: &[u64; 6]) -> [u8; 48] {
    let mut b = [0u8; 48];
    for (i, w) in s.iter().enumerate() {
        b[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    b
}

/// The inverse of [`encode_sim384`]; None unless `v` is 48 bytes.
pub fn decode_sim384(v: &[u8]) -> Option<[u64; 6]> {
    if v.len() != 48 {
        return None;
    }
    let mut s = [0u64; 6];
    for (i, c) in v.chunks_exact(8).enumerate() {
        // chunks_exact(8) gives 8-byte slices.
        s[i] = u64::from_le_bytes(c.try_into().expect("8 bytes"));
    }
    Some(s)
}

/// Henzinger's 384-bit variant: six independent 64-bit simhashes, part j using the token
/// hash xxh3_64(word, SEED_SIMHASH384 + j). Bit i of part j is bit 64·j + i.
pub fn simhash384(text: &str) -> [u64; 6] {
    let mut accs: [Accumulator; 6] = std::array::from_fn(|_| Accumulator::new());
    for w in super::words(text) {
        for (j, acc) in accs.iter_mut().enumerate() {
            acc.add(hash::xxh3(w, SEED_SIMHASH384.wrapping_add(j as u64)));
        }
    }
    accs.map(Accumulator::finish)
}

/// Number of differing bits.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Number of differing bits of two multi-word fingerprints (e.g. 384-bit simhashes).
pub fn hamming_wide(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| hamming(*x, *y)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, computed the slow way: signed sums per coordinate.
    fn reference(hashes: &[u64]) -> u64 {
        let mut fp = 0u64;
        for i in 0..64 {
            let v: i64 = hashes
                .iter()
                .map(|h| if (h >> i) & 1 == 1 { 1 } else { -1 })
                .sum();
            if v > 0 {
                fp |= 1 << i;
            }
        }
        fp
    }

    #[test]
    fn matches_the_signed_sum_definition() {
        let mut hashes = Vec::new();
        // Past several 255-token flushes, with repeats (term frequency) and ties.
        for n in [0usize, 1, 2, 254, 255, 256, 1000, 3001] {
            hashes.clear();
            for i in 0..n {
                hashes.push(hash::splitmix64_nth(7, (i % 97) as u64));
            }
            let mut acc = Accumulator::new();
            hashes.iter().for_each(|&h| acc.add(h));
            assert_eq!(acc.finish(), reference(&hashes), "n = {n}");
        }
        // A tie (one token with bit i set, one without) gives 0.
        let mut acc = Accumulator::new();
        acc.add(u64::MAX);
        acc.add(0);
        assert_eq!(acc.finish(), 0);
        assert_eq!(simhash(""), 0);
        assert_eq!(simhash("x"), hash::word_hash(b"x")); // one token: its own hash
    }

    /// `of_hashes` is the accumulator's value for every count around its block of sixteen and
    /// its flush of 255 blocks, on random hashes, repeated ones (term frequency), all-ones and
    /// all-zeros hashes (every count at its extreme) and single-bit ones (ties).
    #[test]
    fn of_hashes_equals_the_accumulator() {
        let sizes = (0..100).chain([
            255, 256, 4079, 4080, 4081, 4095, 4096, 8159, 8160, 8161, 20_000,
        ]);
        for n in sizes {
            for kind in 0..5u64 {
                let hs: Vec<u64> = (0..n as u64)
                    .map(|i| {
                        let r = hash::splitmix64_nth(kind, i);
                        match kind {
                            0 => r,
                            1 => hash::splitmix64_nth(1, i % 7),
                            2 => u64::MAX,
                            3 => [0, u64::MAX, r][(r % 3) as usize],
                            _ => 1 << (r % 64) | (i & 1) << 63,
                        }
                    })
                    .collect();
                let mut acc = Accumulator::new();
                hs.iter().for_each(|&h| acc.add(h));
                assert_eq!(of_hashes(&hs), acc.finish(), "n={n} kind={kind}");
                if n <= 300 {
                    assert_eq!(of_hashes(&hs), reference(&hs), "n={n} kind={kind}");
                }
            }
        }
    }

    #[test]
    fn golden_simhash() {
        let text = "the quick brown fox jumps over the lazy dog";
        assert_eq!(simhash(text), GOLDEN_SIMHASH64);
        assert_eq!(simhash384(text), GOLDEN_SIMHASH384);
    }

    fn sample_text(seed: u64, words: usize) -> Vec<String> {
        (0..words)
            .map(|i| format!("w{}", hash::splitmix64_nth(seed, i as u64) % 5000))
            .collect()
    }

    #[test]
    fn near_identical_texts_are_close() {
        let base = sample_text(1, 2000);
        let mut edited = base.clone();
        for i in (0..2000).step_by(200) {
            edited[i] = format!("changed{i}"); // 10 of 2000 words
        }
        let other = sample_text(2, 2000);
        let (b, e, o) = (base.join(" "), edited.join(" "), other.join(" "));
        let near = hamming(simhash(&b), simhash(&e));
        let far = hamming(simhash(&b), simhash(&o));
        assert!(near <= 8, "near {near}");
        assert!(far >= 16, "far {far}");
        let near384 = hamming_wide(&simhash384(&b), &simhash384(&e));
        let far384 = hamming_wide(&simhash384(&b), &simhash384(&o));
        assert!(
            near384 <= 40 && far384 >= 120,
            "near {near384} far {far384}"
        );
        // Word order does not matter (bag of words), word content does.
        let rev: Vec<&str> = base.iter().rev().map(|s| s.as_str()).collect();
        assert_eq!(simhash(&rev.join(" ")), simhash(&b));
    }

    #[test]
    fn set_simhash_counts_each_kept_feature_once() {
        let set: Vec<u64> = (0..500).map(|i| hash::splitmix64_nth(3, i)).collect();
        assert_eq!(simhash_of_set(&set, |_| true), reference(&set));
        // The filter removes features as if they were absent.
        let kept: Vec<u64> = set.iter().copied().filter(|f| f % 3 != 0).collect();
        assert_eq!(simhash_of_set(&set, |f| f % 3 != 0), reference(&kept));
        assert_eq!(simhash_of_set(&[], |_| true), 0);
        // Sets sharing 90% of their features are closer than sets sharing none.
        let near: Vec<u64> = set[..450]
            .iter()
            .copied()
            .chain((0..50).map(|i| hash::splitmix64_nth(4, i)))
            .collect();
        let far: Vec<u64> = (0..500).map(|i| hash::splitmix64_nth(5, i)).collect();
        let a = simhash_of_set(&set, |_| true);
        assert!(hamming(a, simhash_of_set(&near, |_| true)) < 14);
        assert!(hamming(a, simhash_of_set(&far, |_| true)) > 18);
    }

    #[test]
    fn hamming_counts_bits() {
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b1011, 0b0001), 2);
        assert_eq!(hamming_wide(&[1, 0, 3], &[0, 0, 0]), 3);
    }

    const GOLDEN_SIMHASH64: u64 = 0x5AD3_0DA5_8617_121B;
    const GOLDEN_SIMHASH384: [u64; 6] = [
        0x90AA_8FC2_F967_FC36,
        0x015A_4892_3075_B8B7,
        0x8F29_F255_1E38_93C1,
        0x1535_93F4_B4D5_379D,
        0xEFE0_BF7D_481F_0AEE,
        0x7734_ACF5_E545_0328,
    ];
}
