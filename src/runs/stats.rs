//! The counts of `ndd-index runs`, as pure functions of a topic's similar pairs.
//!
//! - A document of a set is *duplicated* at t if another document of the same set has
//!   resemblance >= t with it.
//! - In a ranked list, walking down from the top and keeping each document unless it has
//!   resemblance >= T with a document already kept, the skipped ones are *redundant*.
//!
//! Unresolved documents (docnos not in the index) are `None` in a list: they keep their place
//! and are never duplicates.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::pairs::TopicPair;
use crate::threshold::Threshold;

/// The resemblance levels of the prevalence counts: 0.1, 0.2, ..., 0.9, with their labels.
pub fn levels() -> Vec<(String, Threshold)> {
    (1..=9)
        .map(|k| (format!("0.{k}"), Threshold::from_ratio(k, 10)))
        .collect()
}

/// `a/b > c/d` for fractions with positive denominators.
fn greater(a: (u64, u64), c: (u64, u64)) -> bool {
    (a.0 as u128) * (c.1 as u128) > (c.0 as u128) * (a.1 as u128)
}

/// For each level, how many documents of the set `in_set` are duplicated at it within the set.
/// `pairs` must hold every pair of the set down to the lowest level.
pub fn duplicated_at_levels(
    pairs: &[TopicPair],
    in_set: impl Fn(u32) -> bool,
) -> BTreeMap<String, u64> {
    let mut best: HashMap<u32, (u64, u64)> = HashMap::new();
    for p in pairs.iter().filter(|p| in_set(p.a) && in_set(p.b)) {
        for d in [p.a, p.b] {
            let e = best.entry(d).or_insert((p.inter, p.denom));
            if greater((p.inter, p.denom), *e) {
                *e = (p.inter, p.denom);
            }
        }
    }
    levels()
        .into_iter()
        .map(|(label, t)| {
            let n = best.values().filter(|&&(i, d)| t.admits(i, d)).count() as u64;
            (label, n)
        })
        .collect()
}

/// The highest level (1..=9 for 0.1..0.9, 0: below 0.1) a pair's resemblance reaches.
pub fn level_of(p: &TopicPair) -> u8 {
    (1..=9u8)
        .rev()
        .find(|&k| Threshold::from_ratio(k as u64, 10).admits(p.inter, p.denom))
        .unwrap_or(0)
}

/// For each level, how many documents reach it with their best partner: `best` holds each
/// document's highest [`level_of`] over its pairs inside the set (0 for none, and for documents
/// outside the set). The same counts as [`duplicated_at_levels`] over those pairs.
pub fn duplicated_from_best(best: impl Iterator<Item = u8> + Clone) -> BTreeMap<String, u64> {
    levels()
        .into_iter()
        .zip(1u8..)
        .map(|((label, _), k)| (label, best.clone().filter(|&b| b >= k).count() as u64))
        .collect()
}

/// Each document's partners at resemblance >= T.
#[derive(Debug, Default)]
pub struct Neighbors(HashMap<u32, Vec<u32>>);

impl Neighbors {
    pub fn new(pairs: &[TopicPair], t: Threshold) -> Self {
        let mut m: HashMap<u32, Vec<u32>> = HashMap::new();
        for p in pairs.iter().filter(|p| t.admits(p.inter, p.denom)) {
            m.entry(p.a).or_default().push(p.b);
            m.entry(p.b).or_default().push(p.a);
        }
        Neighbors(m)
    }

    fn of(&self, d: u32) -> &[u32] {
        self.0.get(&d).map_or(&[], Vec::as_slice)
    }
}

/// The redundancy walk: `true` at each position whose document is redundant.
pub fn redundant_flags(list: &[Option<u32>], nb: &Neighbors) -> Vec<bool> {
    let mut kept: HashSet<u32> = HashSet::new();
    list.iter()
        .map(|item| match item {
            None => false,
            Some(d) => {
                if nb.of(*d).iter().any(|o| kept.contains(o)) {
                    true
                } else {
                    kept.insert(*d);
                    false
                }
            }
        })
        .collect()
}

/// Documents of `list` duplicated at T within `list`.
pub fn duplicated_in(list: &[Option<u32>], nb: &Neighbors) -> u64 {
    let set: HashSet<u32> = list.iter().flatten().copied().collect();
    list.iter()
        .flatten()
        .filter(|d| nb.of(**d).iter().any(|o| set.contains(o)))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: u32, b: u32, inter: u64, denom: u64) -> TopicPair {
        TopicPair { a, b, inter, denom }
    }

    #[test]
    fn duplicated_levels_use_each_documents_best_partner_in_the_set() {
        let pairs = [pair(1, 2, 3, 10), pair(2, 3, 9, 10), pair(1, 4, 5, 10)];
        let all = duplicated_at_levels(&pairs, |_| true);
        assert_eq!(all["0.1"], 4);
        assert_eq!(all["0.3"], 4);
        assert_eq!(all["0.4"], 4); // 1 and 4 at 0.5, 2 and 3 at 0.9
        assert_eq!(all["0.6"], 2);
        assert_eq!(all["0.9"], 2);
        // The same from each document's best level.
        let mut best = [0u8; 5];
        for p in &pairs {
            for d in [p.a, p.b] {
                best[d as usize] = best[d as usize].max(level_of(p));
            }
        }
        assert_eq!(duplicated_from_best(best.iter().copied()), all);
        assert_eq!(level_of(&pair(1, 4, 5, 10)), 5);
        assert_eq!(level_of(&pair(1, 4, 1, 11)), 0);
        let without_3 = duplicated_at_levels(&pairs, |d| d != 3);
        assert_eq!(without_3["0.3"], 3);
        assert_eq!(without_3["0.6"], 0);
    }

    #[test]
    fn the_walk_keeps_the_first_of_each_group() {
        // 1~2, 2~3 (but 1 and 3 are not similar): walking 1, 3, 2 skips only 2.
        let nb = Neighbors::new(
            &[pair(1, 2, 6, 10), pair(2, 3, 6, 10), pair(1, 3, 1, 10)],
            Threshold::from_ratio(1, 2),
        );
        let list = [Some(1), None, Some(3), Some(2), Some(9)];
        assert_eq!(
            redundant_flags(&list, &nb),
            [false, false, false, true, false]
        );
        // Walking 2 first keeps 2 and skips both 1 and 3.
        assert_eq!(
            redundant_flags(&[Some(2), Some(1), Some(3)], &nb),
            [false, true, true]
        );
        assert_eq!(duplicated_in(&list, &nb), 3);
        assert_eq!(duplicated_in(&[Some(1), Some(3)], &nb), 0);
    }
}
