//! The synthetic vocabulary: pronounceable word forms by frequency rank, and a Zipf sampler.
//!
//! Word forms depend only on the rank (not on --seed or --vocab), so corpora generated
//! with different seeds or vocabulary sizes speak the same "language", and a smaller
//! vocabulary is a prefix of a larger one. Frequent (low-rank) words are short, as in
//! natural language, which keeps the bytes per word close to English (~6 with the space).

use crate::rng::{splitmix64, tag, Rng};
use std::collections::HashSet;

const ONSETS: &[&str] = &[
    "", "", "", "b", "c", "d", "f", "g", "h", "k", "l", "l", "m", "m", "n", "n", "p", "r", "r",
    "s", "s", "t", "t", "v", "w", "y", "z", "br", "ch", "dr", "gr", "pl", "sh", "st", "th", "tr",
];
const VOWELS: &[&str] = &[
    "a", "a", "e", "e", "e", "i", "i", "o", "o", "u", "ai", "ea", "oo", "ou",
];
const CODAS: &[&str] = &[
    "", "", "", "", "", "", "", "", "", "", "n", "n", "r", "r", "s", "s", "t", "l", "nd", "st",
];

/// One in this many words is written with an `&eacute;` entity in place of an inner `e`
/// (the word then canonicalizes to a form containing `é`). Decided per word, not per
/// occurrence, so a variant and its original always render a word the same way.
const ACCENT_ONE_IN: u64 = 50;

/// Fixed seed of the word forms: the vocabulary deliberately ignores --seed.
const VOCAB_SEED: u64 = 0x0005_EED7_0CAB;

/// All word forms, as they appear in HTML (possibly with an entity), concatenated.
pub struct Vocab {
    text: String,
    offs: Vec<u32>,
}

impl Vocab {
    /// Builds forms for ranks `0..size`. Forms are unique: a colliding candidate is redrawn.
    pub fn build(size: u32) -> Vocab {
        let mut text = String::with_capacity(size as usize * 8);
        let mut offs = Vec::with_capacity(size as usize + 1);
        offs.push(0u32);
        // Membership by 64-bit hash keeps memory small for multi-million vocabularies; a
        // (practically impossible) hash collision only causes a harmless redraw.
        let mut seen: HashSet<u64> = HashSet::with_capacity(size as usize);
        let mut word = String::new();
        for rank in 0..size {
            let mut rng = Rng::stream(VOCAB_SEED, tag::VOCAB, rank as u64);
            let mut syllables = match rank {
                0..=9 => 1,
                10..=999 => 2,
                _ => 2 + rng.below(2),
            };
            let mut attempts = 0;
            loop {
                word.clear();
                for _ in 0..syllables {
                    push_syllable(&mut rng, &mut word);
                }
                if rng.below(ACCENT_ONE_IN) == 0 {
                    if let Some(pos) = word[1..].find('e') {
                        word.replace_range(pos + 1..pos + 2, "&eacute;");
                    }
                }
                if seen.insert(hash_str(&word)) {
                    break;
                }
                attempts += 1;
                if attempts % 8 == 0 {
                    syllables += 1;
                }
            }
            text.push_str(&word);
            offs.push(u32::try_from(text.len()).expect("vocabulary text exceeds 4 GiB"));
        }
        Vocab { text, offs }
    }

    /// The HTML form of the word with this rank.
    #[inline]
    pub fn html(&self, rank: u32) -> &str {
        let r = rank as usize;
        &self.text[self.offs[r] as usize..self.offs[r + 1] as usize]
    }
}

fn push_syllable(rng: &mut Rng, out: &mut String) {
    out.push_str(ONSETS[rng.below(ONSETS.len() as u64) as usize]);
    out.push_str(VOWELS[rng.below(VOWELS.len() as u64) as usize]);
    out.push_str(CODAS[rng.below(CODAS.len() as u64) as usize]);
}

fn hash_str(s: &str) -> u64 {
    let mut h = s.len() as u64;
    for chunk in s.as_bytes().chunks(8) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        let mut st = h ^ u64::from_le_bytes(b);
        h = splitmix64(&mut st);
    }
    h
}

/// Zipf(s) over ranks `0..n` (P(rank r) ∝ 1/(r+1)^s), sampled in O(1) with Vose's alias
/// method from a single 64-bit draw.
pub struct Zipf {
    /// Probability of keeping column i instead of taking its alias, scaled to 2^64.
    keep: Vec<u64>,
    alias: Vec<u32>,
}

impl Zipf {
    pub fn new(n: u32, s: f64) -> Zipf {
        let n_us = n as usize;
        let weights: Vec<f64> = (0..n).map(|r| ((r + 1) as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut keep = vec![u64::MAX; n_us];
        let mut alias: Vec<u32> = (0..n).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) =
            (0..n).partition(|&i| scaled[i as usize] < 1.0);
        while let (Some(&s_i), Some(&l_i)) = (small.last(), large.last()) {
            small.pop();
            let p = scaled[s_i as usize];
            keep[s_i as usize] = (p * 18_446_744_073_709_551_616.0) as u64; // p * 2^64, saturating
            alias[s_i as usize] = l_i;
            scaled[l_i as usize] = (scaled[l_i as usize] + p) - 1.0;
            if scaled[l_i as usize] < 1.0 {
                large.pop();
                small.push(l_i);
            }
        }
        // Whatever remains has probability 1 up to rounding: keep = MAX, alias = itself.
        Zipf { keep, alias }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        // The high half of x*n picks a column uniformly; the low half is a uniform fraction
        // independent enough of the column to serve as the biased coin.
        let prod = rng.next_u64() as u128 * self.keep.len() as u128;
        let col = (prod >> 64) as usize;
        if (prod as u64) < self.keep[col] {
            col as u32
        } else {
            self.alias[col]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_unique_lowercase_and_a_prefix_across_sizes() {
        let big = Vocab::build(20_000);
        let small = Vocab::build(500);
        let mut seen = HashSet::new();
        for r in 0..20_000 {
            let w = big.html(r);
            assert!(!w.is_empty());
            assert!(
                w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b"&;".contains(&b)),
                "{w}"
            );
            assert!(w.as_bytes()[0].is_ascii_lowercase());
            assert!(seen.insert(w.to_string()), "duplicate form {w}");
            if r < 500 {
                assert_eq!(w, small.html(r));
            }
        }
        assert!(seen.iter().any(|w| w.contains("&eacute;")));
        // Frequent words are short.
        let short = (0..10).map(|r| big.html(r).len()).max().unwrap();
        assert!(short <= 6, "top words too long: {short}");
    }

    #[test]
    fn zipf_frequencies_follow_the_law() {
        let z = Zipf::new(1000, 1.1);
        let mut rng = Rng::from_seed(3);
        let mut counts = vec![0u32; 1000];
        let draws = 400_000;
        for _ in 0..draws {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        let total: f64 = (1..=1000).map(|r| (r as f64).powf(-1.1)).sum();
        for r in [0usize, 1, 9, 99] {
            let expect = draws as f64 * ((r + 1) as f64).powf(-1.1) / total;
            let got = counts[r] as f64;
            assert!(
                (got - expect).abs() < 0.05 * expect + 30.0,
                "rank {r}: {got} vs {expect}"
            );
        }
        // Rank 0 is about 2^1.1 times as frequent as rank 1.
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((ratio - 2f64.powf(1.1)).abs() < 0.1, "{ratio}");
    }
}
