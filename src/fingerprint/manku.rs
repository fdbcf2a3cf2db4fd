//! Manku, Jain & Das Sarma's permuted tables for "all 64-bit fingerprints within Hamming
//! distance k" (format-spec/fingerprints.md, §9), generalised to any b > k blocks.
//!
//! The 64 bits are cut into b blocks. If two fingerprints differ in at most k bits, the
//! differences touch at most k blocks, so some b - k blocks are identical. One table per
//! choice of b - k blocks stores every fingerprint permuted so that those blocks come first;
//! a query then scans, in each table, the keys whose leading prefix_bits equal its own
//! permuted prefix, and checks the Hamming distance of those candidates only.

use crate::error::{Error, Result};

/// Manku et al.'s setting for 64-bit simhashes: k = 3 with 6 blocks gives C(6,3) = 20 tables
/// with 30-33-bit prefixes (see the spec for the trade-off).
pub const DEFAULT_K: u32 = 3;
pub const DEFAULT_BLOCKS: u32 = 6;
/// Refuse configurations with more tables than this (C(b, k) grows fast).
pub const MAX_TABLES: usize = 1024;

/// One bit-field move: `width` bits at `src` (shift from bit 0) go to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Move {
    src: u32,
    dst: u32,
    width: u32,
}

fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The bit permutation of one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permutation {
    /// Block indices in key order: the b - k prefix blocks ascending, then the rest ascending.
    order: Vec<u32>,
    /// Bits of the exact-match prefix (the widths of the first b - k blocks of `order`).
    prefix_bits: u32,
    moves: Vec<Move>,
}

impl Permutation {
    fn new(order: Vec<u32>, prefix_blocks: usize, widths: &[u32]) -> Self {
        // Block j starts `start[j]` bits below the most significant bit.
        let start: Vec<u32> = widths
            .iter()
            .scan(0, |s, &w| {
                let v = *s;
                *s += w;
                Some(v)
            })
            .collect();
        let mut dst_start = 0;
        let mut moves = Vec::with_capacity(order.len());
        let mut prefix_bits = 0;
        for (t, &j) in order.iter().enumerate() {
            let w = widths[j as usize];
            moves.push(Move {
                src: 64 - start[j as usize] - w,
                dst: 64 - dst_start - w,
                width: w,
            });
            dst_start += w;
            if t < prefix_blocks {
                prefix_bits += w;
            }
        }
        Permutation {
            order,
            prefix_bits,
            moves,
        }
    }

    /// Block indices in key order: the b - k prefix blocks ascending, then the rest.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// The permuted key of fingerprint `fp`.
    #[inline]
    pub fn apply(&self, fp: u64) -> u64 {
        self.moves.iter().fold(0, |acc, m| {
            acc | (((fp >> m.src) & low_mask(m.width)) << m.dst)
        })
    }

    /// The fingerprint of permuted key `key` (the inverse of `apply`).
    #[inline]
    pub fn invert(&self, key: u64) -> u64 {
        self.moves.iter().fold(0, |acc, m| {
            acc | (((key >> m.dst) & low_mask(m.width)) << m.src)
        })
    }
}

/// The C(b, k) tables for Hamming distance <= k over b blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PermutedTables {
    k: u32,
    blocks: u32,
    perms: Vec<Permutation>,
}

/// Block widths: 64 = b·q + r; the first r blocks (the most significant) get q + 1 bits.
pub fn block_widths(blocks: u32) -> Vec<u32> {
    let (q, r) = (64 / blocks, 64 % blocks);
    (0..blocks).map(|j| if j < r { q + 1 } else { q }).collect()
}

fn binomial(n: u64, k: u64) -> u128 {
    (0..k).fold(1u128, |acc, i| acc * (n - i) as u128 / (i + 1) as u128)
}

impl PermutedTables {
    /// Tables for distance <= k with `blocks` blocks. Needs k < blocks <= 64 and at most
    /// MAX_TABLES tables.
    pub fn new(k: u32, blocks: u32) -> Result<Self> {
        if blocks == 0 || blocks > 64 || k >= blocks {
            return Err(Error::InvalidArgument(format!(
                "simhash tables: need k < blocks <= 64 (got k={k}, blocks={blocks})"
            )));
        }
        let n_tables = binomial(blocks as u64, k as u64);
        if n_tables > MAX_TABLES as u128 {
            return Err(Error::InvalidArgument(format!(
                "simhash tables: k={k}, blocks={blocks} needs {n_tables} tables (max {MAX_TABLES})"
            )));
        }
        let widths = block_widths(blocks);
        let prefix = (blocks - k) as usize;
        let mut perms = Vec::with_capacity(n_tables as usize);
        // Choices of prefix blocks in lexicographic order.
        let mut choice: Vec<u32> = (0..prefix as u32).collect();
        loop {
            let mut order = choice.clone();
            order.extend((0..blocks).filter(|j| !choice.contains(j)));
            perms.push(Permutation::new(order, prefix, &widths));
            // Next combination: bump the rightmost element that can still move.
            let Some(i) = (0..prefix)
                .rev()
                .find(|&i| choice[i] < blocks - (prefix - i) as u32)
            else {
                break;
            };
            choice[i] += 1;
            for t in i + 1..prefix {
                choice[t] = choice[t - 1] + 1;
            }
        }
        debug_assert_eq!(perms.len() as u128, n_tables);
        Ok(PermutedTables { k, blocks, perms })
    }

    /// Manku et al.'s default (k = 3, 6 blocks, 20 tables).
    pub fn default_tables() -> Self {
        // Cannot fail: 3 < 6 <= 64 and C(6, 3) = 20 <= MAX_TABLES.
        Self::new(DEFAULT_K, DEFAULT_BLOCKS).expect("default parameters are valid")
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Number of tables, C(blocks, k).
    pub fn tables(&self) -> usize {
        self.perms.len()
    }

    pub fn permutation(&self, table: usize) -> &Permutation {
        &self.perms[table]
    }

    /// The key of `fp` in `table`. Panics if `table >= tables()` (a programming error).
    pub fn permute(&self, table: usize, fp: u64) -> u64 {
        self.perms[table].apply(fp)
    }

    /// The fingerprint stored under `key` in `table`.
    pub fn unpermute(&self, table: usize, key: u64) -> u64 {
        self.perms[table].invert(key)
    }

    /// Length of the exact-match prefix of `table`'s keys.
    pub fn prefix_bits(&self, table: usize) -> u32 {
        self.perms[table].prefix_bits
    }

    /// The inclusive range of keys in `table` that share `fp`'s permuted prefix: every
    /// fingerprint within distance k of `fp` has its key in this range in at least one table.
    pub fn prefix_range(&self, table: usize, fp: u64) -> (u64, u64) {
        let key = self.permute(table, fp);
        let rest = low_mask(64 - self.prefix_bits(table)); // the bits after the prefix
        (key & !rest, key | rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::hash::splitmix64_nth;
    use crate::fingerprint::simhash::hamming;

    #[test]
    fn default_layout() {
        let t = PermutedTables::default_tables();
        assert_eq!(t.tables(), 20);
        assert_eq!(block_widths(6), vec![11, 11, 11, 11, 10, 10]);
        assert_eq!(t.permutation(0).order(), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(t.permutation(1).order(), vec![0, 1, 3, 2, 4, 5]);
        assert_eq!(t.permutation(19).order(), vec![3, 4, 5, 0, 1, 2]);
        assert_eq!(t.prefix_bits(0), 33);
        assert_eq!(t.prefix_bits(19), 31);
        let x = 0x0123_4567_89AB_CDEF;
        assert_eq!(t.permute(0, x), x); // table 0 is the identity
                                        // Table 19 moves blocks 3,4,5 (the low 31 bits) to the top.
        assert_eq!(t.permute(19, x), x.rotate_left(33));
        assert_eq!(
            t.prefix_range(0, x),
            (x & !((1 << 31) - 1), x | ((1 << 31) - 1))
        );
    }

    #[test]
    fn parameters_are_checked() {
        assert!(PermutedTables::new(3, 3).is_err());
        assert!(PermutedTables::new(0, 0).is_err());
        assert!(PermutedTables::new(1, 65).is_err());
        assert!(PermutedTables::new(10, 30).is_err()); // C(30,10) tables
        let one = PermutedTables::new(0, 1).unwrap(); // exact match, one table
        assert_eq!((one.tables(), one.prefix_bits(0)), (1, 64));
        assert_eq!(one.prefix_range(0, 42), (42, 42));
        assert_eq!(PermutedTables::new(3, 4).unwrap().tables(), 4);
        assert_eq!(PermutedTables::new(1, 64).unwrap().tables(), 64);
    }

    #[test]
    fn permutations_are_bijections() {
        for (k, b) in [(3, 6), (3, 4), (2, 5), (4, 7), (1, 64), (0, 3)] {
            let t = PermutedTables::new(k, b).unwrap();
            for table in 0..t.tables() {
                for i in 0..200 {
                    let x = splitmix64_nth(table as u64, i);
                    let y = t.permute(table, x);
                    assert_eq!(y.count_ones(), x.count_ones());
                    assert_eq!(t.unpermute(table, y), x);
                }
                // Every single bit lands on a distinct bit.
                let image = (0..64).fold(0u64, |acc, bit| acc | t.permute(table, 1 << bit));
                assert_eq!(image, u64::MAX);
            }
        }
    }

    /// Exhaustive for the default tables: every flip of <= 3 bits of a fingerprint is found.
    #[test]
    fn every_flip_of_up_to_k_bits_is_found() {
        let t = PermutedTables::default_tables();
        let fp = 0xDEAD_BEEF_0BAD_F00D;
        let found = |y: u64| {
            (0..t.tables()).any(|tb| {
                let (lo, hi) = t.prefix_range(tb, fp);
                (lo..=hi).contains(&t.permute(tb, y))
            })
        };
        // Bit 64 stands for "no bit", and repeats collapse, so this visits every set of
        // 0..=3 bit positions.
        let bit = |i: u32| if i < 64 { 1u64 << i } else { 0 };
        let mut sizes = [0usize; 4];
        for a in 0..=64 {
            for b in a..=64 {
                for c in b..=64 {
                    let flips = bit(a) | bit(b) | bit(c);
                    if (a == b && a < 64) || (b == c && b < 64) {
                        continue; // the same set is visited with the repeat replaced by 64
                    }
                    assert!(found(fp ^ flips), "flips {flips:#x}");
                    sizes[flips.count_ones() as usize] += 1;
                }
            }
        }
        assert_eq!(sizes, [1, 64, 2016, 41664]);
    }

    /// Brute force: a search through sorted permuted tables finds exactly the pairs within
    /// distance k, for random fingerprints and random flips of 0..=k+1 bits.
    #[test]
    fn table_search_equals_brute_force() {
        for (k, b) in [(3u32, 6u32), (3, 4), (2, 5)] {
            let t = PermutedTables::new(k, b).unwrap();
            let mut fps = Vec::new();
            let mut r = 0u64;
            let mut rnd = || {
                r += 1;
                splitmix64_nth(99, r)
            };
            for _ in 0..1500 {
                let base = rnd();
                fps.push(base);
                let mut v = base;
                for _ in 0..(rnd() % (k as u64 + 2)) {
                    v ^= 1 << (rnd() % 64);
                }
                fps.push(v);
            }
            let tables: Vec<Vec<(u64, usize)>> = (0..t.tables())
                .map(|tb| {
                    let mut v: Vec<(u64, usize)> = fps
                        .iter()
                        .enumerate()
                        .map(|(i, &f)| (t.permute(tb, f), i))
                        .collect();
                    v.sort_unstable();
                    v
                })
                .collect();
            let mut pairs = 0;
            for (i, &q) in fps.iter().enumerate() {
                let mut got = Vec::new();
                for (tb, table) in tables.iter().enumerate() {
                    let (lo, hi) = t.prefix_range(tb, q);
                    let start = table.partition_point(|e| e.0 < lo);
                    got.extend(table[start..].iter().take_while(|e| e.0 <= hi).map(|e| e.1));
                }
                got.retain(|&j| hamming(fps[j], q) <= k);
                got.sort_unstable();
                got.dedup();
                let want: Vec<usize> = (0..fps.len())
                    .filter(|&j| hamming(fps[j], q) <= k)
                    .collect();
                assert_eq!(got, want, "query {i}, k={k}, b={b}");
                pairs += want.len() - 1;
            }
            assert!(pairs > 1000, "too few near pairs to be a test: {pairs}");
        }
    }
}
