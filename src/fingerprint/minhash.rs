//! Min-hash (Broder's min-wise permutations) and the DSC-SS supershingles built from it
//! (format-spec/fingerprints.md, §5 and §7).
//!
//! Permutation i is h_i(x) = mix64(x XOR seed_i), with mix64 the splitmix64 finalizer (a
//! bijection, so h_i really permutes the 2^64 shingle hashes) and seed_i the i-th splitmix64
//! output from SEED_MINHASH_PERM. The min value of permutation i over a set S is
//! min_{x in S} h_i(x); two sets agree at position i with probability |A∩B| / |A∪B|.

use super::hash::{self, mix64, splitmix64_nth, SEED_MINHASH_FEATURE, SEED_MINHASH_PERM};

/// Largest K accepted for `minhash:K` (the cost is K mixes per shingle).
pub const MAX_PERMUTATIONS: u32 = 4096;

/// The seeds of the first `k` permutations.
pub fn permutation_seeds(k: u32) -> Vec<u64> {
    (0..k as u64)
        .map(|i| splitmix64_nth(SEED_MINHASH_PERM, i))
        .collect()
}

/// The K min values of a set of shingle hashes (duplicates are harmless), position i being
/// the minimum under permutation i. An empty set has no min values (empty vector), so empty
/// documents never agree with anything.
pub fn minhash_values(shingle_hashes: &[u64], k: u32) -> Vec<u64> {
    if shingle_hashes.is_empty() || k == 0 {
        return Vec::new();
    }
    let seeds = permutation_seeds(k);
    let mut mins = vec![u64::MAX; k as usize];
    // Shingles outer, permutations inner: `mins` and `seeds` stay in L1 and the inner loop
    // is branch-free.
    for &x in shingle_hashes {
        for (m, &s) in mins.iter_mut().zip(&seeds) {
            *m = (*m).min(mix64(x ^ s));
        }
    }
    mins
}

/// Number of low feature bits that hold the position: enough for K - 1 (0 when K == 1).
pub fn position_bits(k: usize) -> u32 {
    if k <= 1 {
        0
    } else {
        64 - ((k - 1) as u64).leading_zeros()
    }
}

/// The min-hash features of a document: feature i = (mix64(min_i XOR SEED_MINHASH_FEATURE)
/// with its low p bits cleared) OR i, where p = position_bits(K). So features at different
/// positions always differ, equal min values at the same position always give equal features
/// (a chance 2^-(64-p) of equal features from different min values), and the position is
/// `feature & (2^p - 1)`. Returned sorted ascending.
pub fn features(minvalues: &[u64]) -> Vec<u64> {
    let p = position_bits(minvalues.len());
    let low = if p == 0 { 0 } else { u64::MAX >> (64 - p) };
    let mut out: Vec<u64> = minvalues
        .iter()
        .enumerate()
        .map(|(i, &m)| (mix64(m ^ SEED_MINHASH_FEATURE) & !low) | i as u64)
        .collect();
    out.sort_unstable();
    out
}

/// DSC-SS supershingles: min values in consecutive groups of `per_group` (84 / 14 -> 6);
/// supershingle j = xxh3_64(LE bytes of group j's min values, SEED_SUPERSHINGLE + j).
/// Seeding with j makes a supershingle unique to its position, so supershingles can be used
/// as set features as well as positionally. Leftover min values (K mod per_group) are unused.
pub fn supershingles(minvalues: &[u64], per_group: usize) -> Vec<u64> {
    if per_group == 0 {
        return Vec::new();
    }
    let mut buf = Vec::with_capacity(8 * per_group);
    minvalues
        .chunks_exact(per_group)
        .enumerate()
        .map(|(j, group)| {
            buf.clear();
            for m in group {
                buf.extend_from_slice(&m.to_le_bytes());
            }
            hash::xxh3(&buf, hash::SEED_SUPERSHINGLE.wrapping_add(j as u64))
        })
        .collect()
}

/// Megashingles (Fetterly et al.): one per pair i < j of supershingles, in lexicographic pair
/// order, = xxh3_64(LE(s_i) || LE(s_j), SEED_MEGASHINGLE). Two documents share a megashingle
/// iff they agree on at least two supershingles (up to hash collisions), so megashingle
/// postings find the B-similar pairs for min_agree = 2 without a pair count.
pub fn megashingles(supers: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(supers.len() * supers.len().saturating_sub(1) / 2);
    for i in 0..supers.len() {
        for j in i + 1..supers.len() {
            let mut buf = [0u8; 16];
            buf[..8].copy_from_slice(&supers[i].to_le_bytes());
            buf[8..].copy_from_slice(&supers[j].to_le_bytes());
            out.push(hash::xxh3(&buf, hash::SEED_MEGASHINGLE));
        }
    }
    out
}

/// Positions at which two positional vectors (min values or supershingles) agree.
pub fn agreements(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x == y).count()
}

/// DSC-SS "B-similar": the documents agree on at least `min_agree` supershingles (Broder's
/// choice is 2 of 6). Takes supershingles in position order, as `supershingles` returns them.
pub fn b_similar(a: &[u64], b: &[u64], min_agree: usize) -> bool {
    agreements(a, b) >= min_agree
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random stream for tests.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 += 1;
            splitmix64_nth(0x5eed, self.0)
        }
    }

    /// Two sets drawn from a small pool so they overlap a lot.
    fn pair(rng: &mut Rng, pool: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let pick = |rng: &mut Rng, keep: u64| -> Vec<u64> {
            pool.iter()
                .copied()
                .filter(|_| rng.next() % 100 < keep)
                .collect()
        };
        let keep = 50 + rng.next() % 50;
        (pick(rng, keep), pick(rng, keep))
    }

    #[test]
    fn golden_min_values() {
        // Pins the permutation family: a change here changes every stored min-hash feature.
        assert_eq!(permutation_seeds(2), vec![GOLDEN_SEED0, GOLDEN_SEED1]);
        assert_eq!(minhash_values(&[1, 2, 3], 2), GOLDEN_MINS.to_vec());
        assert!(minhash_values(&[], 84).is_empty());
    }

    #[test]
    fn min_values_are_set_functions() {
        let a = minhash_values(&[5, 9, 1, 7], 16);
        assert_eq!(a, minhash_values(&[7, 1, 9, 5, 5, 1], 16));
        assert_eq!(a.len(), 16);
        // Each min value is the image of some element under that permutation.
        let seeds = permutation_seeds(16);
        for (i, m) in a.iter().enumerate() {
            assert!([5u64, 9, 1, 7].iter().any(|&x| mix64(x ^ seeds[i]) == *m));
        }
    }

    #[test]
    fn agreement_rate_estimates_jaccard() {
        let mut rng = Rng(1);
        let pool: Vec<u64> = (0..400).map(|_| rng.next()).collect();
        let (a, b) = (&pool[..300], &pool[100..]); // J = 200 / 400 = 0.5
        let k = 1024;
        let agree = agreements(&minhash_values(a, k), &minhash_values(b, k));
        let est = agree as f64 / k as f64;
        assert!((est - 0.5).abs() < 0.06, "estimate {est}");
    }

    #[test]
    fn features_are_position_tagged() {
        let mins = [7u64, 7, 3, 3, 3];
        let f = features(&mins);
        assert_eq!(position_bits(5), 3);
        assert_eq!(f.len(), 5);
        let mut pos: Vec<u64> = f.iter().map(|x| x & 7).collect();
        pos.sort_unstable();
        assert_eq!(pos, vec![0, 1, 2, 3, 4]); // distinct although values repeat
                                              // Same value at the same position -> same feature; one change -> one feature differs.
        let g = features(&[7u64, 7, 3, 4, 3]);
        let common = f.iter().filter(|x| g.binary_search(x).is_ok()).count();
        assert_eq!(common, 4);
        assert_eq!(position_bits(1), 0);
        assert_eq!(position_bits(84), 7);
        assert_eq!(position_bits(128), 7);
        assert_eq!(position_bits(129), 8);
        assert_eq!(features(&[42]).len(), 1);
    }

    #[test]
    fn b_similarity_matches_brute_force() {
        let mut rng = Rng(2);
        let mut seen = [0usize; 7];
        for round in 0..300 {
            // Small pools give high resemblance, so every agreement count shows up.
            let pool: Vec<u64> = (0..(8 + round % 40)).map(|_| rng.next()).collect();
            let (a, b) = pair(&mut rng, &pool);
            let (ma, mb) = (minhash_values(&a, 84), minhash_values(&b, 84));
            let (sa, sb) = (supershingles(&ma, 14), supershingles(&mb, 14));
            if a.is_empty() || b.is_empty() {
                assert!(sa.is_empty() || sb.is_empty());
                continue;
            }
            assert_eq!((sa.len(), sb.len()), (6, 6));
            // Brute force: groups whose 14 min values are all equal.
            let brute = (0..6)
                .filter(|g| ma[g * 14..g * 14 + 14] == mb[g * 14..g * 14 + 14])
                .count();
            assert_eq!(agreements(&sa, &sb), brute);
            seen[brute] += 1;
            for min_agree in 0..=7 {
                assert_eq!(b_similar(&sa, &sb, min_agree), brute >= min_agree);
            }
            // Sharing a megashingle == agreeing on >= 2 supershingles.
            let (xa, xb) = (megashingles(&sa), megashingles(&sb));
            assert_eq!(xa.len(), 15);
            let shared = xa.iter().filter(|x| xb.contains(x)).count();
            assert_eq!(shared, brute * brute.saturating_sub(1) / 2);
        }
        assert!(
            seen[0] > 0 && seen[6] > 0 && seen[1..6].iter().sum::<usize>() > 0,
            "{seen:?}"
        );
    }

    #[test]
    fn supershingles_depend_on_position_and_group() {
        let m: Vec<u64> = (0..28).collect();
        let s = supershingles(&m, 14);
        assert_eq!(s.len(), 2);
        // Same 14 values in group 0 and group 1 still give different supershingles.
        let same: Vec<u64> = (0..14).chain(0..14).collect();
        let t = supershingles(&same, 14);
        assert_ne!(t[0], t[1]);
        assert_eq!(supershingles(&m[..27], 14).len(), 1); // leftovers unused
        assert!(supershingles(&m, 0).is_empty());
    }

    const GOLDEN_SEED0: u64 = 0xB0D2_9C24_8451_50E3;
    const GOLDEN_SEED1: u64 = 0x803C_EBD1_8EE8_90BC;
    const GOLDEN_MINS: [u64; 2] = [0x6A13_150F_28BE_2F69, 0x2C4D_8F6D_51DC_C3A5];
}
