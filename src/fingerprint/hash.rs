//! Every hash function and seed that decides a stored byte (format-spec/fingerprints.md, §2).
//!
//! Hashes are xxh3 (the `xxhash-rust` crate, which implements the XXH3 spec bit for bit on
//! every platform) with fixed, explicit seeds, plus the splitmix64 finalizer as the cheap
//! bijective mixer of min-hash. Changing anything here changes every index on disk, so the
//! golden tests at the bottom pin the outputs: bump the fingerprint format version instead.

use xxhash_rust::xxh3::{xxh3_128, xxh3_64_with_seed};

/// Seeds are 8 ASCII bytes read as a little-endian u64, so they are easy to spot in the spec.
const fn tag(s: &[u8; 8]) -> u64 {
    u64::from_le_bytes(*s)
}

/// Seed of the per-word hash (also the token hash of the 64-bit simhash).
pub const SEED_WORD: u64 = tag(b"ndd/word");
/// Seed of the word-shingle hash (over the LE bytes of the w word hashes).
pub const SEED_WORD_SHINGLE: u64 = tag(b"ndd/wshi");
/// Seed of the character-shingle hash (over the shingle's UTF-8 bytes).
pub const SEED_CHAR_SHINGLE: u64 = tag(b"ndd/cshi");
/// Start state of the splitmix64 sequence that yields the min-hash permutation seeds.
pub const SEED_MINHASH_PERM: u64 = tag(b"ndd/mhpm");
/// Xored into a min value before mixing it into a min-hash feature.
pub const SEED_MINHASH_FEATURE: u64 = tag(b"ndd/mhft");
/// Base seed of DSC-SS supershingles (the group index is added).
pub const SEED_SUPERSHINGLE: u64 = tag(b"ndd/sups");
/// Seed of megashingles (hash of a pair of supershingles).
pub const SEED_MEGASHINGLE: u64 = tag(b"ndd/mega");
/// Base seed of the six token hashes of the 384-bit simhash (the hash index is added).
pub const SEED_SIMHASH384: u64 = tag(b"ndd/s384");
/// Randomized I-Match lexicons (format-spec/fingerprints.md §13.1).
pub const SEED_IMATCH_LEXICON: u64 = tag(b"ndd/imlx");

/// The splitmix64 increment (the golden ratio in 64-bit fixed point).
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The splitmix64 output function (Steele, Lea & Flood 2014; Stafford's "Mix13").
/// A bijection on u64: distinct inputs give distinct outputs, which min-hash relies on.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The i-th output (0-based) of splitmix64 started at state `seed`.
#[inline]
pub fn splitmix64_nth(seed: u64, i: u64) -> u64 {
    mix64(seed.wrapping_add(i.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)))
}

/// Hash of one word, given its UTF-8 bytes.
#[inline]
pub fn word_hash(word: &[u8]) -> u64 {
    xxh3_64_with_seed(word, SEED_WORD)
}

/// Hash of a word shingle, given the little-endian bytes of its w word hashes (8w bytes).
#[inline]
pub fn word_shingle_hash(word_hash_bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(word_hash_bytes, SEED_WORD_SHINGLE)
}

/// The first 128 bytes of XXH3's default secret (`kSecret` of the XXH3 spec), as
/// little-endian u64s: what inputs of 17-128 bytes are mixed with.
const XXH3_SECRET_128: [u64; 16] = {
    const B: [u8; 128] = [
        0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad,
        0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3,
        0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc,
        0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6,
        0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65,
        0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19,
        0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9,
        0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31,
        0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    ];
    let mut w = [0u64; 16];
    let mut i = 0;
    while i < 16 {
        let mut k = 0;
        while k < 8 {
            w[i] |= (B[8 * i + k] as u64) << (8 * k);
            k += 1;
        }
        i += 1;
    }
    w
};

/// xxh3-64 (seed `SEED_WORD_SHINGLE`) of the little-endian bytes of `W` word hashes, for
/// 3 <= W <= 16 (17-128 bytes): the same value as [`word_shingle_hash`] of those bytes,
/// computed on the words where they are. XXH3 reads inputs of 17-128 bytes as 16-byte chunks
/// at offsets 0, 16, 32, 48 from the front and from the back; with a length that is a multiple
/// of 8, every chunk is two whole words, so no bytes are assembled. Pinned by the test
/// `word_shingle_hash_of_words_equals_bytes` (every W, random words) and the golden values.
#[inline(always)]
pub fn word_shingle_hash_words<const W: usize>(w: &[u64; W]) -> u64 {
    const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
    const { assert!(W >= 3 && W <= 16) };
    let len = 8 * W;
    let s = &XXH3_SECRET_128;
    let seed = SEED_WORD_SHINGLE;
    // XXH3's mix16B of the chunk at byte `at` with the secret at byte `sec`.
    let mix = |at: usize, sec: usize| {
        let lo = w[at / 8] ^ s[sec / 8].wrapping_add(seed);
        let hi = w[at / 8 + 1] ^ s[sec / 8 + 1].wrapping_sub(seed);
        let p = u128::from(lo) * u128::from(hi);
        (p as u64) ^ ((p >> 64) as u64)
    };
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    if len > 32 {
        if len > 64 {
            if len > 96 {
                acc = acc.wrapping_add(mix(48, 96));
                acc = acc.wrapping_add(mix(len - 64, 112));
            }
            acc = acc.wrapping_add(mix(32, 64));
            acc = acc.wrapping_add(mix(len - 48, 80));
        }
        acc = acc.wrapping_add(mix(16, 32));
        acc = acc.wrapping_add(mix(len - 32, 48));
    }
    acc = acc.wrapping_add(mix(0, 0));
    acc = acc.wrapping_add(mix(len - 16, 16));
    // XXH3's avalanche.
    acc ^= acc >> 37;
    acc = acc.wrapping_mul(0x1656_6791_9E37_79F9);
    acc ^ (acc >> 32)
}

/// Hash of a character shingle (its UTF-8 bytes).
#[inline]
pub fn char_shingle_hash(utf8: &[u8]) -> u64 {
    xxh3_64_with_seed(utf8, SEED_CHAR_SHINGLE)
}

/// Exact-duplicate digest of the canonical text: xxh3-128 (seed 0) stored as the
/// little-endian bytes of the 128-bit value. (`xxhsum -H2` prints the same bytes reversed.)
pub fn digest(text: &str) -> [u8; 16] {
    xxh3_128(text.as_bytes()).to_le_bytes()
}

/// General seeded xxh3-64, for the derived hashes of min-hash, DSC-SS and simhash384.
#[inline]
pub fn xxh3(bytes: &[u8], seed: u64) -> u64 {
    xxh3_64_with_seed(bytes, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_their_ascii_tags() {
        assert_eq!(SEED_WORD, 0x6472_6f77_2f64_646e);
        assert_eq!(&SEED_WORD_SHINGLE.to_le_bytes(), b"ndd/wshi");
        assert_eq!(&SEED_CHAR_SHINGLE.to_le_bytes(), b"ndd/cshi");
    }

    /// Golden values: if one of these changes, every stored fingerprint changes.
    /// Cross-checked against an independent implementation of the spec over the reference C
    /// xxHash library (Python `xxhash` 4.1.0).
    #[test]
    fn golden_hashes() {
        // Unseeded xxh3 reference values (XXH3 test vectors).
        assert_eq!(xxh3(b"", 0), 0x2D06_8005_38D3_94C2);
        assert_eq!(xxh3_128(b""), 0x99AA_06D3_0147_98D8_6001_C324_468D_497F);
        assert_eq!(word_hash(b"the"), GOLDEN_WORD_THE);
        assert_eq!(word_hash(b"llvm"), GOLDEN_WORD_LLVM);
        let mut five = Vec::new();
        for w in ["a", "b", "c", "d", "e"] {
            five.extend_from_slice(&word_hash(w.as_bytes()).to_le_bytes());
        }
        assert_eq!(word_shingle_hash(&five), GOLDEN_SHINGLE_ABCDE);
        assert_eq!(
            char_shingle_hash("the llvm compiler".as_bytes()),
            GOLDEN_CHARS
        );
        assert_eq!(digest("the llvm compiler"), GOLDEN_DIGEST);
    }

    /// The word-level shingle hash is the byte-level one, for every W it takes.
    #[test]
    fn word_shingle_hash_of_words_equals_bytes() {
        fn check<const W: usize>(seed: u64) {
            for i in 0..2000u64 {
                let mut w = [0u64; W];
                for (k, x) in w.iter_mut().enumerate() {
                    // Random words, and now and then extreme ones.
                    *x = match (i + k as u64) % 97 {
                        0 => 0,
                        1 => u64::MAX,
                        _ => splitmix64_nth(seed, i * 16 + k as u64),
                    };
                }
                let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
                assert_eq!(
                    word_shingle_hash_words(&w),
                    word_shingle_hash(&bytes),
                    "W={W}"
                );
            }
        }
        check::<3>(1);
        check::<4>(2);
        check::<5>(3);
        check::<6>(4);
        check::<7>(5);
        check::<8>(6);
        check::<9>(7);
        check::<10>(8);
        check::<11>(9);
        check::<12>(10);
        check::<13>(11);
        check::<14>(12);
        check::<15>(13);
        check::<16>(14);
        let five = [b"a", b"b", b"c", b"d", b"e"].map(|w| word_hash(w));
        assert_eq!(word_shingle_hash_words(&five), GOLDEN_SHINGLE_ABCDE);
    }

    #[test]
    fn mixers_match_reference() {
        // splitmix64 seeded with 0: first outputs of the reference generator (Vigna).
        assert_eq!(splitmix64_nth(0, 0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64_nth(0, 1), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(splitmix64_nth(0, 2), 0x06C4_5D18_8009_454F);
        assert_eq!(mix64(0), 0);
    }

    const GOLDEN_WORD_THE: u64 = 0x72F7_09A5_DA17_324B;
    const GOLDEN_WORD_LLVM: u64 = 0xCEC8_7908_3D4F_E673;
    const GOLDEN_SHINGLE_ABCDE: u64 = 0x25F9_24CF_7815_E994;
    const GOLDEN_CHARS: u64 = 0x8F8B_DA76_1B52_D416;
    const GOLDEN_DIGEST: [u8; 16] = [
        218, 146, 79, 99, 175, 176, 131, 145, 200, 54, 218, 77, 78, 190, 153, 63,
    ];
}
