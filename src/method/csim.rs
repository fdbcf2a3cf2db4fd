//! C-similar pairs (agreeing bits of the 384-bit simhashes / 384 >= t) found through indexed
//! pieces of the bit strings instead of comparing all n²/2 pairs.
//!
//! Pigeonhole: two strings at Hamming distance h <= k, cut into m pieces, differ in at most
//! floor(k/m) bits in at least one piece. So every document is put in m tables keyed by its
//! pieces, and each document probes, in every table, its own piece and every value within
//! r = floor(k/m) bits of it; each pair met that way is verified on all 384 bits. This finds
//! exactly the pairs at distance <= k: the same set as comparing all pairs
//! ([`all_pairs_brute_force`]; a test compares them). Henzinger (2006, section 4) cut the
//! bit string into non-overlapping pieces the same way (r = 0); with r > 0 fewer, wider
//! pieces suffice (Manku et al.'s tables; Norouzi et al.'s multi-index hashing).
//!
//! m is chosen per search to minimise (probes per document) x (1 + expected bucket size),
//! with pieces of at most 64 bits. The tables are built in memory from the stored SIM384
//! tables at search time (12 bytes per document and piece) and not persisted.

use rayon::prelude::*;

use crate::fingerprint::simhash::hamming_wide;

/// Bits of a C-similarity bit string.
pub const BITS: u32 = 384;

/// The largest Hamming distance h with `1 - h/384 >= t` (the rule of `dsc::c_similarity`),
/// `None` when no distance qualifies (t > 1).
pub fn max_hamming(t: f64) -> Option<u32> {
    (0..=BITS)
        .rev()
        .find(|&h| 1.0 - h as f64 / BITS as f64 >= t)
}

/// Bits `start..start + len` (len <= 64) of a 384-bit string, as the low bits of a u64.
fn bits(x: &[u64; 6], start: u32, len: u32) -> u64 {
    debug_assert!((1..=64).contains(&len) && start + len <= BITS);
    let (w, o) = ((start / 64) as usize, start % 64);
    let mut v = x[w] >> o;
    if o + len > 64 {
        v |= x[w + 1] << (64 - o);
    }
    if len == 64 {
        v
    } else {
        v & ((1u64 << len) - 1)
    }
}

fn binomial_sum(b: u32, r: u32) -> f64 {
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for i in 1..=r.min(b) {
        term = term * (b - i + 1) as f64 / i as f64;
        sum += term;
    }
    sum
}

/// The number of pieces for `n` strings and distance `k`: the cheapest by the estimate above.
pub fn choose_pieces(n: usize, k: u32) -> u32 {
    let mut best = (f64::INFINITY, 6);
    for m in 6..=BITS {
        let b = BITS / m; // the narrowest piece; the widest is b + 1
        let r = k / m;
        let probes = m as f64 * binomial_sum(b + 1, r);
        let cost = probes * (1.0 + n as f64 / 2f64.powi(b as i32));
        if cost < best.0 {
            best = (cost, m);
        }
    }
    best.1
}

/// Every mask of at most `r` bits set among the low `b` bits.
fn masks(b: u32, r: u32) -> Vec<u64> {
    let mut out = vec![0u64];
    let mut frontier = vec![(0u64, 0u32)]; // (mask, next free bit)
    for _ in 0..r {
        let mut next = Vec::new();
        for &(m, from) in &frontier {
            for bit in from..b {
                let x = m | (1u64 << bit);
                out.push(x);
                next.push((x, bit + 1));
            }
        }
        frontier = next;
    }
    out
}

/// Every pair (i, j), i < j, of `strings` at Hamming distance <= `k`, as
/// (i, j, distance), sorted; indexes into `strings`.
pub fn pairs_within(strings: &[[u64; 6]], k: u32) -> Vec<(u32, u32, u32)> {
    let n = strings.len();
    if n < 2 {
        return Vec::new();
    }
    let m = choose_pieces(n, k.min(BITS));
    let r = k / m;
    // Piece j covers bits start[j]..start[j+1].
    let start: Vec<u32> = (0..=m).map(|j| j * BITS / m).collect();
    let tables: Vec<Vec<(u64, u32)>> = (0..m as usize)
        .into_par_iter()
        .map(|j| {
            let len = start[j + 1] - start[j];
            let mut t: Vec<(u64, u32)> = strings
                .iter()
                .enumerate()
                .map(|(i, x)| (bits(x, start[j], len), i as u32))
                .collect();
            t.sort_unstable();
            t
        })
        .collect();
    let widths: Vec<u32> = (0..m as usize).map(|j| start[j + 1] - start[j]).collect();
    let mask_sets: Vec<Vec<u64>> = widths.iter().map(|&b| masks(b, r)).collect();
    let mut out: Vec<(u32, u32, u32)> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let x = &strings[i];
            let mut cand: Vec<u32> = Vec::new();
            for (j, t) in tables.iter().enumerate() {
                let v = bits(x, start[j], widths[j]);
                for &mask in &mask_sets[j] {
                    let probe = v ^ mask;
                    let lo = t.partition_point(|e| e.0 < probe);
                    // Only partners after i: each pair is found from its first member.
                    let lo = lo
                        + t[lo..]
                            .iter()
                            .take_while(|e| e.0 == probe && e.1 <= i as u32)
                            .count();
                    cand.extend(t[lo..].iter().take_while(|e| e.0 == probe).map(|e| e.1));
                }
            }
            cand.sort_unstable();
            cand.dedup();
            cand.into_iter().filter_map(move |j| {
                let h = hamming_wide(x, &strings[j as usize]);
                (h <= k).then_some((i as u32, j, h))
            })
        })
        .collect();
    out.sort_unstable();
    out
}

/// The same pairs as [`pairs_within`] by comparing all n²/2 pairs (the test oracle).
pub fn all_pairs_brute_force(strings: &[[u64; 6]], k: u32) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for i in 0..strings.len() {
        for j in i + 1..strings.len() {
            let h = hamming_wide(&strings[i], &strings[j]);
            if h <= k {
                out.push((i as u32, j as u32, h));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic xorshift stream.
    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// Strings in families: a random base, and members with a few bits flipped.
    fn strings(n: usize, seed: u64) -> Vec<[u64; 6]> {
        let mut s = seed | 1;
        let mut out = Vec::new();
        while out.len() < n {
            let base: [u64; 6] = std::array::from_fn(|_| rng(&mut s));
            let members = 1 + rng(&mut s) % 5;
            for _ in 0..members {
                let mut x = base;
                for _ in 0..rng(&mut s) % 60 {
                    let b = rng(&mut s) % 384;
                    x[(b / 64) as usize] ^= 1 << (b % 64);
                }
                out.push(x);
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn indexed_search_finds_exactly_the_brute_force_pairs() {
        for (n, seed) in [(0, 1), (1, 2), (300, 3), (700, 4)] {
            let v = strings(n, seed);
            for k in [0, 1, 5, 11, 29, 40, 57, 100, 200, 384] {
                let want = all_pairs_brute_force(&v, k);
                assert_eq!(pairs_within(&v, k), want, "n {n} k {k}");
                if n >= 300 && (5..=100).contains(&k) {
                    assert!(!want.is_empty(), "the test must have pairs (n {n} k {k})");
                }
            }
        }
    }

    #[test]
    fn pieces_bits_and_masks() {
        let x = [u64::MAX, 0, 0xff, 0, 0, 1 << 63];
        assert_eq!(bits(&x, 60, 8), 0x0f);
        assert_eq!(bits(&x, 128, 8), 0xff);
        assert_eq!(bits(&x, 320, 64), 1 << 63);
        assert_eq!(bits(&x, 383, 1), 1);
        assert_eq!(masks(4, 0), [0]);
        assert_eq!(masks(4, 1).len(), 5);
        assert_eq!(masks(10, 2).len(), 1 + 10 + 45);
        assert_eq!(max_hamming(355.0 / 384.0), Some(29));
        assert_eq!(max_hamming(1.0), Some(0));
        assert_eq!(max_hamming(0.0), Some(384));
        assert_eq!(max_hamming(1.5), None);
        let m = choose_pieces(1_000_000, 29);
        assert!((6..=30).contains(&m), "{m}");
    }
}
