//! The words of a document: an original's Zipf-sampled body text, and a variant's
//! word-level edits of it (as in Chowdhury et al.'s I-Match evaluation).
//!
//! A variant never sees another variant: each is edited independently from the original,
//! so a cluster is a star around its original.

use crate::rng::{tag, Rng};
use crate::vocab::{Vocab, Zipf};

/// Everything needed to produce the word sequence of any document.
pub struct WordSource<'a> {
    pub seed: u64,
    pub mean_words: u32,
    pub edit_rate: f64,
    pub vocab: &'a Vocab,
    pub zipf: &'a Zipf,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EditCounts {
    pub deleted: u32,
    pub swapped: u32,
    pub inserted: u32,
}

impl EditCounts {
    pub fn total(&self) -> u32 {
        self.deleted + self.swapped + self.inserted
    }
}

impl WordSource<'_> {
    /// Body words (as vocabulary ranks) of the original at position `orig`. Regular
    /// documents have `mean/2 + Exp(mean/2)` words (mean `mean`, a long tail, capped at
    /// 8x); I-Match originals (`long`) have 1-2 KB of text.
    pub fn original_words(&self, orig: u32, long: bool, out: &mut Vec<u32>) {
        let mut rng = Rng::stream(self.seed, tag::WORDS, orig as u64);
        out.clear();
        if long {
            let target = rng.range(1024, 2048) as usize;
            let mut bytes = 0;
            while bytes < target {
                let w = self.zipf.sample(&mut rng);
                bytes += self.vocab.html(w).len() + 1;
                out.push(w);
            }
            return;
        }
        let half = self.mean_words as f64 / 2.0;
        let tail = -(1.0 - rng.f64()).ln() * half;
        let n = (half + tail)
            .round()
            .clamp(1.0, self.mean_words as f64 * 8.0) as usize;
        out.extend((0..n).map(|_| self.zipf.sample(&mut rng)));
    }

    /// The words of variant `doc` of `original`: each word is, with probability R/3 each,
    /// deleted, swapped with the next word, or preceded by a random (Zipf) word.
    pub fn variant_words(&self, doc: u32, original: &[u32], out: &mut Vec<u32>) -> EditCounts {
        let mut rng = Rng::stream(self.seed, tag::EDITS, doc as u64);
        apply_edits(original, self.edit_rate, &mut rng, self.zipf, out)
    }
}

pub fn apply_edits(
    src: &[u32],
    rate: f64,
    rng: &mut Rng,
    zipf: &Zipf,
    out: &mut Vec<u32>,
) -> EditCounts {
    let third = rate / 3.0;
    let mut counts = EditCounts::default();
    out.clear();
    let mut i = 0;
    while i < src.len() {
        let u = rng.f64();
        if u < third {
            counts.deleted += 1;
            i += 1;
        } else if u < 2.0 * third {
            if i + 1 < src.len() {
                out.extend_from_slice(&[src[i + 1], src[i]]);
                counts.swapped += 1;
                i += 2;
            } else {
                // The last word has no next neighbour: leave it.
                out.push(src[i]);
                i += 1;
            }
        } else if u < rate {
            out.extend_from_slice(&[zipf.sample(rng), src[i]]);
            counts.inserted += 1;
            i += 1;
        } else {
            out.push(src[i]);
            i += 1;
        }
    }
    if out.is_empty() && !src.is_empty() {
        // A document keeps at least one word (only reachable with tiny docs, high rates).
        out.push(src[0]);
    }
    counts
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// Word-level optimal string alignment distance (Levenshtein plus adjacent swaps).
    pub fn osa_distance(a: &[u32], b: &[u32]) -> usize {
        let w = b.len() + 1;
        let mut d = vec![0usize; (a.len() + 1) * w];
        for i in 0..=a.len() {
            for j in 0..=b.len() {
                d[i * w + j] = if i == 0 {
                    j
                } else if j == 0 {
                    i
                } else {
                    let cost = (a[i - 1] != b[j - 1]) as usize;
                    let mut v = (d[(i - 1) * w + j] + 1)
                        .min(d[i * w + j - 1] + 1)
                        .min(d[(i - 1) * w + j - 1] + cost);
                    if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                        v = v.min(d[(i - 2) * w + j - 2] + 1);
                    }
                    v
                };
            }
        }
        d[a.len() * w + b.len()]
    }

    #[test]
    fn edit_rate_is_honoured() {
        let vocab = Vocab::build(50_000);
        let zipf = Zipf::new(50_000, 1.1);
        for rate in [0.02, 0.05, 0.2] {
            let src = WordSource {
                seed: 9,
                mean_words: 1000,
                edit_rate: rate,
                vocab: &vocab,
                zipf: &zipf,
            };
            let (mut orig, mut var) = (Vec::new(), Vec::new());
            let (mut words, mut ops, mut dist) = (0usize, 0usize, 0usize);
            for d in 0..20 {
                src.original_words(d, false, &mut orig);
                let c = src.variant_words(1000 + d, &orig, &mut var);
                words += orig.len();
                ops += c.total() as usize;
                dist += osa_distance(&orig, &var);
                let net = orig.len() as i64 + c.inserted as i64 - c.deleted as i64;
                assert_eq!(var.len() as i64, net);
            }
            let op_rate = ops as f64 / words as f64;
            let dist_rate = dist as f64 / words as f64;
            // Swaps consume two words per draw, so the op rate sits slightly below R.
            assert!(
                op_rate > 0.85 * rate && op_rate < 1.1 * rate,
                "rate {rate}: ops {op_rate}"
            );
            // Edits can cancel or be cheaper than counted (swapping equal words), never dearer.
            assert!(
                dist_rate > 0.75 * rate && dist_rate <= op_rate + 1e-9,
                "rate {rate}: dist {dist_rate}"
            );
        }
    }

    #[test]
    fn zero_rate_copies_and_mean_length_holds() {
        let vocab = Vocab::build(1000);
        let zipf = Zipf::new(1000, 1.1);
        let src = WordSource {
            seed: 1,
            mean_words: 300,
            edit_rate: 0.0,
            vocab: &vocab,
            zipf: &zipf,
        };
        let (mut orig, mut var, mut total) = (Vec::new(), Vec::new(), 0usize);
        for d in 0..2000 {
            src.original_words(d, false, &mut orig);
            assert!(orig.len() >= 150);
            total += orig.len();
            assert_eq!(src.variant_words(d, &orig, &mut var), EditCounts::default());
            assert_eq!(var, orig);
        }
        let mean = total as f64 / 2000.0;
        assert!((mean - 300.0).abs() < 10.0, "{mean}");
        src.original_words(5, true, &mut orig);
        let bytes: usize = orig.iter().map(|&w| vocab.html(w).len() + 1).sum();
        assert!((1024..2048 + 64).contains(&bytes), "{bytes}");
    }
}
