//! idf-weighted simhash (format-spec/fingerprints.md §8.1): Charikar's simhash where every
//! distinct term of a document counts its idf instead of its occurrences, so the frequent
//! words that dominate a tf simhash (markup words, "the") barely move it and the rare,
//! content-bearing words decide the bits.
//!
//! The idf comes from the frozen I-Match lexicon (src/method/imatch.rs): N documents and a df
//! per term, frozen when the first batch is ingested (or given with `--imatch-lexicon`), so a
//! document's idf simhash depends only on its text and the epoch's lexicon and stays stable
//! while the running statistics drift. idf(t) = ln((N + 1) / (df(t) + 1)), df = 0 for a term
//! outside the lexicon (a rare term: the largest weight).

use super::imatch::Lexicon;

/// idf of a term under the lexicon.
pub fn idf(lex: &Lexicon, term: u64) -> f64 {
    let df = lex.df.get(&term).copied().unwrap_or(0) as f64;
    ((lex.docs as f64 + 1.0) / (df + 1.0)).ln()
}

/// The idf-weighted 64-bit simhash of a document's distinct terms (sorted unique word hashes):
/// bit i is 1 iff the sum over terms of idf(t)·(+1 if bit i of t is set, else -1) is > 0.
/// The weights are rounded to 1/1024 and summed as integers so the result does not depend on
/// the summation order or platform. No terms (or all weights 0) gives 0.
pub fn simhash(lex: &Lexicon, terms: &[u64]) -> u64 {
    let mut acc = [0i64; 64];
    for &t in terms {
        let w = (idf(lex, t) * 1024.0).round() as i64;
        if w == 0 {
            continue;
        }
        for (i, a) in acc.iter_mut().enumerate() {
            if t >> i & 1 == 1 {
                *a += w;
            } else {
                *a -= w;
            }
        }
    }
    acc.iter()
        .enumerate()
        .fold(0u64, |fp, (i, &a)| if a > 0 { fp | 1 << i } else { fp })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn weights_follow_idf() {
        // Two terms: a common one (df = N) weighs 0, so only the rare one decides the bits.
        let (common, rare) = (0xFFFF_0000_FFFF_0000u64, 0x0000_0000_0000_FFFFu64);
        let lex = Lexicon {
            epoch: 1,
            docs: 9,
            df: HashMap::from([(common, 9), (rare, 1)]),
        };
        assert_eq!(idf(&lex, common), 0.0);
        assert_eq!(simhash(&lex, &[common, rare]), rare);
        assert_eq!(simhash(&lex, &[common]), 0);
        assert_eq!(simhash(&lex, &[]), 0);
        // Unknown terms weigh the most: they outvote a known rare term.
        let unknown = !rare;
        assert_eq!(simhash(&lex, &[rare, unknown]), unknown);
    }

    #[test]
    fn equals_brute_force_signed_sum() {
        let terms: Vec<u64> = (1..40u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let lex = Lexicon {
            epoch: 1,
            docs: 100,
            df: terms
                .iter()
                .enumerate()
                .map(|(i, &t)| (t, i as u32 * 2))
                .collect(),
        };
        let want = (0..64).fold(0u64, |fp, i| {
            let s: f64 = terms
                .iter()
                .map(|&t| {
                    let w = (idf(&lex, t) * 1024.0).round();
                    if t >> i & 1 == 1 {
                        w
                    } else {
                        -w
                    }
                })
                .sum();
            if s > 0.0 {
                fp | 1 << i
            } else {
                fp
            }
        });
        assert_eq!(simhash(&lex, &terms), want);
    }
}
