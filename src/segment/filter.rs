//! Key filters of the POSTINGS table (table [`super::POSTINGS_FILTER`], format-spec/segment.md
//! "Key filter"): one xor filter (Graf & Lemire, "Xor Filters: Faster and Smaller Than Bloom
//! and Cuckoo Filters", JEA 2020) per POSTINGS data block, 8-bit fingerprints, about 9.9 bits a
//! key and a false-positive rate of 1/256.
//!
//! A filter answers "may block i hold key k?" from three bytes of its own, so a reader skips the
//! posting blocks that hold none of its probe keys without touching them. One filter per block
//! keeps the writer's memory bounded by one block's keys and makes the lookup free of any
//! search beyond the block search readers do anyway.
//!
//! Value layout (all little-endian): empty = no filter (every key may be present; written when
//! construction fails, which the 100 seeds make practically impossible), else
//! `seed: u64`, `len: u32` (the length L of each of the three fingerprint segments, >= 1), then
//! `3 L` fingerprint bytes.

/// Bytes before the fingerprints.
pub const FILTER_HEADER_LEN: usize = 12;
/// Seeds tried before giving up (and writing the empty "no filter" value).
const MAX_ATTEMPTS: u64 = 100;

/// The 64-bit finalizer of MurmurHash3: a bijection, so distinct keys get distinct hashes.
#[inline]
pub(crate) fn mix(key: u64, seed: u64) -> u64 {
    let mut h = key.wrapping_add(seed);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// `x * n >> 32`: maps 32 bits uniformly onto `0..n` without a division.
#[inline]
fn reduce(x: u32, n: u32) -> u32 {
    ((x as u64 * n as u64) >> 32) as u32
}

#[inline]
fn fingerprint(h: u64) -> u8 {
    (h ^ (h >> 32)) as u8
}

/// The three slots of hash `h` in a filter whose segments are `len` long.
#[inline]
fn slots(h: u64, len: u32) -> [usize; 3] {
    [
        reduce(h as u32, len) as usize,
        (len + reduce(h.rotate_left(21) as u32, len)) as usize,
        (2 * len + reduce(h.rotate_left(42) as u32, len)) as usize,
    ]
}

/// Seed of construction attempt `i` (deterministic, so the same keys give the same bytes).
fn seed(i: u64) -> u64 {
    mix(i, 0x9e37_79b9_7f4a_7c15)
}

/// Segment length for `n` keys: `3 L >= 1.23 n + 32` (the paper's sizing).
fn segment_len(n: usize) -> u32 {
    let cap = 32 + (123 * n as u64).div_ceil(100);
    cap.div_ceil(3) as u32
}

/// Appends the filter of `keys` (distinct; any order) to `out`. `out` gets the empty "no
/// filter" value when no seed works (never observed: the failure rate per seed is well below
/// 1 % at these sizes).
///
/// The peeling (Graf & Lemire's algorithm 3: slots of one key taken from a queue, the key
/// taken off its three slots, slots left with one key pushed) runs without a branch on the
/// data: a slot taken whose count is no longer one (it is zero then) takes off its xor, 0,
/// and pushes land in the queue's next place, which only advances for a slot left with one
/// key. Blocks' keys are random, so the branches it replaces were mispredicted about as often
/// as not: 17-26 % less time a key than the branching loop (`cargo bench --bench segment --
/// filter`; BENCHMARKS.md, "Key filters built without data-dependent branches").
///
/// The queue is first in, first out (the paper pops a stack): the slot taken next was pushed
/// long before, so its loads do not wait for the last key's pushes, and the keys' peels
/// overlap in the core instead of running one after the other (a stack's top is the slot
/// just pushed). About a third less time a key (BENCHMARKS.md, "Key filters peeled first in,
/// first out"); the keys peeled are the same (peeling succeeds or fails whatever the order),
/// the bytes are not.
pub fn build(keys: &[u64], out: &mut Vec<u8>) {
    let len = segment_len(keys.len());
    let cap = 3 * len as usize;
    let mut xor = vec![0u64; cap];
    let mut count = vec![0u32; cap];
    // Each slot pushed at most once at first, then at most three pushes per key peeled, each
    // written before the queue's back moves (so one place more).
    let mut queue: Vec<u32> = vec![0; cap + 3 * keys.len() + 3];
    let mut stack: Vec<(u32, u64)> = vec![(0, 0); keys.len() + 1];
    for attempt in 0..MAX_ATTEMPTS {
        let s = seed(attempt);
        xor.iter_mut().for_each(|x| *x = 0);
        count.iter_mut().for_each(|c| *c = 0);
        for &k in keys {
            let h = mix(k, s);
            for i in slots(h, len) {
                xor[i] ^= h;
                count[i] += 1;
            }
        }
        let mut q = 0;
        for (i, &c) in count.iter().enumerate() {
            queue[q] = i as u32;
            q += (c == 1) as usize;
        }
        let mut peeled = 0;
        let mut head = 0;
        while head < q {
            let i = queue[head] as usize;
            head += 1;
            // Counts only fall while peeling, so a slot taken with a count other than one
            // has none left (count and xor 0): it takes off the hash 0, a no-op.
            let one = count[i] == 1;
            let h = xor[i];
            stack[peeled] = (i as u32, h);
            peeled += one as usize;
            for j in slots(h, len) {
                xor[j] ^= h;
                count[j] -= one as u32;
                queue[q] = j as u32;
                q += (one & (count[j] == 1)) as usize;
            }
        }
        if peeled != keys.len() {
            continue;
        }
        let start = out.len();
        out.reserve(FILTER_HEADER_LEN + cap);
        out.extend_from_slice(&s.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.resize(start + FILTER_HEADER_LEN + cap, 0);
        let fp = &mut out[start + FILTER_HEADER_LEN..];
        for &(i, h) in stack[..peeled].iter().rev() {
            let [a, b, c] = slots(h, len);
            fp[i as usize] = fingerprint(h) ^ fp[a] ^ fp[b] ^ fp[c];
        }
        return;
    }
}

/// A decoded filter value (borrows the bytes).
#[derive(Clone, Copy, Debug)]
pub struct KeyFilter<'a> {
    seed: u64,
    len: u32,
    fp: &'a [u8],
}

impl<'a> KeyFilter<'a> {
    /// Decodes a filter value: `Ok(None)` for the empty "no filter" value, `Err((offset,
    /// reason))` for bytes that are not a filter.
    pub fn decode(bytes: &'a [u8]) -> Result<Option<Self>, (usize, String)> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let Some((head, fp)) = bytes.split_first_chunk::<FILTER_HEADER_LEN>() else {
            return Err((
                0,
                format!("key filter of {} bytes is too short", bytes.len()),
            ));
        };
        let seed = u64::from_le_bytes(head[0..8].try_into().unwrap_or_default());
        let len = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default());
        if len == 0 || fp.len() as u64 != 3 * len as u64 {
            return Err((
                8,
                format!(
                    "key filter: segment length {len} needs {} fingerprint bytes, value has {}",
                    3 * len as u64,
                    fp.len()
                ),
            ));
        }
        Ok(Some(KeyFilter { seed, len, fp }))
    }

    /// False if `key` is certainly not in the filter's key set; true if it may be (always for
    /// a key of the set, for others with probability about 1/256).
    #[inline]
    pub fn may_contain(&self, key: u64) -> bool {
        let h = mix(key, self.seed);
        let [a, b, c] = slots(h, self.len);
        // decode() checked fp.len() == 3 len, and every slot is < 3 len.
        match (self.fp.get(a), self.fp.get(b), self.fp.get(c)) {
            (Some(x), Some(y), Some(z)) => fingerprint(h) == x ^ y ^ z,
            _ => true,
        }
    }

    /// Asks the CPU to fetch the three fingerprint bytes [`KeyFilter::may_contain`] reads for
    /// `key` (a hint only: batched lookups overlap these cache misses).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        let h = mix(key, self.seed);
        for i in slots(h, self.len) {
            if let Some(b) = self.fp.get(i) {
                super::prefetch(b);
            }
        }
    }

    /// The filter's seed and segment length L (its fingerprints are `3 L` bytes).
    pub fn header(&self) -> (u64, u32) {
        (self.seed, self.len)
    }

    /// Size of the fingerprint array in bytes.
    pub fn fingerprint_bytes(&self) -> usize {
        self.fp.len()
    }
}

/// Where a filter with `seed` and segment length `len` (>= 1) keeps `key`'s fingerprint: the
/// three slots (each `< 3 len`, one per segment) and the byte their xor must equal for
/// [`KeyFilter::may_contain`] to answer true. For readers that keep the header apart from
/// the fingerprint bytes (the sorted key-filter walk).
#[inline]
pub fn probe(seed: u64, len: u32, key: u64) -> ([usize; 3], u8) {
    let h = mix(key, seed);
    (slots(h, len), fingerprint(h))
}

/// Whether `value` (a filter value, possibly empty) may contain `key`; bytes that are not a
/// filter answer "may" (the table's structure is checked by `verify`).
#[inline]
pub fn may_contain(value: &[u8], key: u64) -> bool {
    match KeyFilter::decode(value) {
        Ok(Some(f)) => f.may_contain(key),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize, salt: u64) -> Vec<u64> {
        // Disjoint sets for distinct salts (mix is a bijection of `i + salt`).
        (0..n as u64).map(|i| mix(i, salt << 40)).collect()
    }

    #[test]
    fn no_false_negatives_and_about_one_in_256_false_positives() {
        for n in [0usize, 1, 2, 3, 10, 100, 1000, 5000] {
            let ks = keys(n, 1);
            let mut v = Vec::new();
            build(&ks, &mut v);
            let f = KeyFilter::decode(&v).unwrap().expect("a filter was built");
            assert_eq!(v.len(), FILTER_HEADER_LEN + f.fingerprint_bytes());
            assert!(ks.iter().all(|&k| f.may_contain(k)), "n {n}");
            if n >= 1000 {
                let bits = 8.0 * f.fingerprint_bytes() as f64 / n as f64;
                assert!(bits < 10.2, "n {n}: {bits} bits a key");
            }
        }
        let ks = keys(20_000, 2);
        let mut v = Vec::new();
        build(&ks, &mut v);
        let others = keys(1_000_000, 3);
        let fp = others.iter().filter(|&&k| may_contain(&v, k)).count();
        // Expected 1e6 / 256 = 3906.
        assert!((3000..5000).contains(&fp), "{fp} false positives");
    }

    #[test]
    fn dense_and_adversarial_key_sets() {
        // Consecutive keys, keys differing in high bits only, the extremes.
        let sets: Vec<Vec<u64>> = vec![
            (0..3000).collect(),
            (0..3000).map(|i| i << 40).collect(),
            vec![0, 1, u64::MAX, u64::MAX - 1],
        ];
        for ks in sets {
            let mut v = Vec::new();
            build(&ks, &mut v);
            assert!(!v.is_empty());
            assert!(ks.iter().all(|&k| may_contain(&v, k)));
        }
    }

    #[test]
    fn deterministic_bytes() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        build(&[3, 9], &mut a);
        build(&[3, 9], &mut b);
        assert_eq!(a, b);
        // 2 keys: 3 L >= 1.23 * 2 + 32 -> L = 12.
        assert_eq!(a.len(), 12 + 36);
    }

    /// The construction as the paper writes it (a branch per pop and per push), with a
    /// first-in, first-out queue: the branch-free peeling makes the same pops, pushes and
    /// bytes.
    fn branching_build(keys: &[u64], out: &mut Vec<u8>) {
        let len = segment_len(keys.len());
        let cap = 3 * len as usize;
        for attempt in 0..MAX_ATTEMPTS {
            let s = seed(attempt);
            let (mut xor, mut count) = (vec![0u64; cap], vec![0u32; cap]);
            for &k in keys {
                let h = mix(k, s);
                for i in slots(h, len) {
                    xor[i] ^= h;
                    count[i] += 1;
                }
            }
            let mut queue: std::collections::VecDeque<usize> =
                (0..cap).filter(|&i| count[i] == 1).collect();
            let mut stack = Vec::new();
            while let Some(i) = queue.pop_front() {
                if count[i] != 1 {
                    continue;
                }
                let h = xor[i];
                stack.push((i, h));
                for j in slots(h, len) {
                    xor[j] ^= h;
                    count[j] -= 1;
                    if count[j] == 1 {
                        queue.push_back(j);
                    }
                }
            }
            if stack.len() != keys.len() {
                continue;
            }
            let mut fp = vec![0u8; cap];
            for &(i, h) in stack.iter().rev() {
                let [a, b, c] = slots(h, len);
                fp[i] = fingerprint(h) ^ fp[a] ^ fp[b] ^ fp[c];
            }
            out.extend_from_slice(&s.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&fp);
            return;
        }
    }

    #[test]
    fn branch_free_peeling_gives_the_branching_bytes() {
        for (n, salt) in [
            (0, 1),
            (1, 2),
            (2, 3),
            (7, 4),
            (200, 5),
            (2_500, 6),
            (9_000, 7),
        ] {
            for round in 0..8u64 {
                let ks = keys(n, salt * 100 + round);
                let (mut a, mut b) = (vec![0xAA], vec![0xAA]);
                build(&ks, &mut a);
                branching_build(&ks, &mut b);
                assert_eq!(a, b, "n {n} round {round}");
            }
        }
        // Keys that share slots' low bits (dense ids) too.
        let dense: Vec<u64> = (0..3_000).collect();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        build(&dense, &mut a);
        branching_build(&dense, &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn decode_rejects_malformed_values() {
        assert!(KeyFilter::decode(&[]).unwrap().is_none());
        assert!(KeyFilter::decode(&[0; 11]).is_err());
        let mut v = Vec::new();
        build(&[1, 2, 3], &mut v);
        assert!(KeyFilter::decode(&v[..v.len() - 1]).is_err());
        let mut zero_len = v.clone();
        zero_len[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert!(KeyFilter::decode(&zero_len).is_err());
        let mut huge = v.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(KeyFilter::decode(&huge).is_err());
        // Malformed values answer "may contain".
        assert!(may_contain(&v[..5], 12345));
    }

    /// Stand-in for a libFuzzer run of `segment_key_filter`: every single-bit flip and every
    /// truncation of a real filter value decodes to an error or a filter (never a panic), and
    /// round trips on pseudo-random key lists.
    #[test]
    fn decoder_survives_mutations() {
        let mut v = Vec::new();
        build(&keys(40, 9), &mut v);
        for bit in 0..v.len() * 8 {
            let mut m = v.clone();
            m[bit / 8] ^= 1 << (bit % 8);
            let _ = crate::segment::fuzz::key_filter(&m);
        }
        for cut in 0..v.len() {
            let _ = crate::segment::fuzz::key_filter(&v[..cut]);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for len in [0usize, 1, 8, 9, 64, 800, 8000] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state = mix(state, 1);
                    state as u8
                })
                .collect();
            crate::segment::fuzz::key_filter(&bytes);
        }
    }
}
