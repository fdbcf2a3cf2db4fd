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
