//! The merge policy: a pure function from the live segments to the set worth merging, if any.
//!
//! Tiered, like tantivy's log merge policy: segments are grouped into levels by the logarithm
//! of their size (everything below `min_level_bytes` counts as that size, so tiny nightly
//! segments share the lowest level), and a level holding at least `min_merge` segments is
//! merged. Each segment is rewritten O(log(total / smallest)) times over its life, so the cost
//! of compaction stays proportional to ingest, and the number of live segments stays
//! logarithmic in the index size.

/// What the policy needs to know of one live segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    pub id: u64,
    pub bytes: u64,
    /// Deleted documents whose postings the segment still holds.
    pub deleted_docs: u64,
    /// Documents whose forward lists it holds (deleted ones included).
    pub docs: u64,
}

/// Parameters of the tiered policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MergePolicy {
    /// A level is merged once it holds this many segments.
    pub min_merge: usize,
    /// Width of a level: segments within a factor `2^level_log2` of the level's largest.
    pub level_log2: f64,
    /// Sizes below this count as this (one level for all small segments).
    pub min_level_bytes: u64,
    /// A single segment whose deleted fraction exceeds this is rewritten on its own.
    pub max_deleted_fraction: f64,
    /// Largest segment an automatic merge may produce (Lucene's `maxMergedSegmentMB`): a full
    /// level whose total exceeds it merges only its smallest members that fit, and not at all
    /// if fewer than `min_merge` fit. This bounds the work any one nightly ingest can inherit
    /// from compaction (and the disk a merge needs on top of the index); `compact --full`
    /// ignores it.
    pub max_merged_bytes: u64,
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy {
            min_merge: 4,
            level_log2: 1.5, // a level spans sizes within a factor of ~2.8
            min_level_bytes: 4 << 20,
            max_deleted_fraction: 0.3,
            max_merged_bytes: 16 << 30,
        }
    }
}

/// The segments to merge under `policy`, or None when nothing is worth merging. The choice is
/// the lowest (cheapest) full level; ties and order are deterministic (by size, then id).
pub fn choose(segments: &[SegmentInfo], policy: &MergePolicy) -> Option<Vec<u64>> {
    let log = |s: &SegmentInfo| (s.bytes.max(policy.min_level_bytes).max(1) as f64).log2();
    let mut sorted: Vec<&SegmentInfo> = segments.iter().collect();
    sorted.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.id.cmp(&b.id)));
    let mut levels: Vec<Vec<&SegmentInfo>> = Vec::new();
    let mut top = f64::INFINITY;
    for s in sorted {
        match levels.last_mut() {
            Some(level) if log(s) >= top - policy.level_log2 => level.push(s),
            _ => {
                top = log(s);
                levels.push(vec![s]);
            }
        }
    }
    // Cap each level to its smallest members whose total fits `max_merged_bytes`.
    let fit = |level: &Vec<&SegmentInfo>| -> Vec<u64> {
        let mut total = 0u64;
        let mut ids = Vec::new();
        for s in level.iter().rev() {
            total = total.saturating_add(s.bytes);
            if total > policy.max_merged_bytes {
                break;
            }
            ids.push(s.id);
        }
        ids
    };
    if let Some(mut ids) = levels
        .iter()
        .rev()
        .map(fit)
        .find(|ids| ids.len() >= policy.min_merge.max(2))
    {
        ids.sort_unstable();
        return Some(ids);
    }
    // No full level: rewrite the segment carrying the most deleted documents, if too many.
    segments
        .iter()
        .filter(|s| {
            s.docs > 0 && s.deleted_docs as f64 > policy.max_deleted_fraction * s.docs as f64
        })
        .max_by(|a, b| {
            (a.deleted_docs * b.docs)
                .cmp(&(b.deleted_docs * a.docs))
                .then(b.id.cmp(&a.id))
        })
        .map(|s| vec![s.id])
}

/// `--full`: everything, when there is more than one segment or anything deleted to drop.
pub fn choose_full(segments: &[SegmentInfo]) -> Option<Vec<u64>> {
    if segments.len() > 1 || segments.iter().any(|s| s.deleted_docs > 0) {
        let mut ids: Vec<u64> = segments.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        Some(ids)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(id: u64, mb: u64) -> SegmentInfo {
        SegmentInfo {
            id,
            bytes: mb << 20,
            deleted_docs: 0,
            docs: 100,
        }
    }

    #[test]
    fn few_segments_are_left_alone() {
        let p = MergePolicy::default();
        assert_eq!(choose(&[], &p), None);
        assert_eq!(choose(&[seg(1, 10), seg(2, 10), seg(3, 10)], &p), None);
    }

    #[test]
    fn a_full_level_of_similar_sizes_is_merged() {
        let p = MergePolicy::default();
        let segs = [seg(1, 100), seg(2, 10), seg(3, 12), seg(4, 9), seg(5, 11)];
        assert_eq!(choose(&segs, &p), Some(vec![2, 3, 4, 5]));
    }

    #[test]
    fn small_segments_share_the_lowest_level_and_it_goes_first() {
        let p = MergePolicy::default();
        let mut segs = vec![seg(1, 40), seg(2, 41), seg(3, 42), seg(4, 43)];
        segs.extend(
            [1, 0, 2, 1]
                .iter()
                .enumerate()
                .map(|(i, &mb)| seg(10 + i as u64, mb)),
        );
        assert_eq!(choose(&segs, &p), Some(vec![10, 11, 12, 13]));
    }

    #[test]
    fn very_different_sizes_never_merge() {
        let p = MergePolicy::default();
        let segs = [seg(1, 1000), seg(2, 100), seg(3, 10), seg(4, 1)];
        assert_eq!(choose(&segs, &p), None);
    }

    #[test]
    fn merges_never_exceed_the_largest_merged_size() {
        let p = MergePolicy {
            max_merged_bytes: 100 << 20,
            ..MergePolicy::default()
        };
        // Six 20 MB segments: 120 MB is over the cap, five fit -> a merge of those five.
        let segs: Vec<_> = (1..=6).map(|i| seg(i, 20)).collect();
        let got = choose(&segs, &p).expect("five fit");
        assert_eq!(got.len(), 5);
        // Four 40 MB segments: only two fit, below min_merge -> nothing.
        let segs: Vec<_> = (1..=4).map(|i| seg(i, 40)).collect();
        assert_eq!(choose(&segs, &p), None);
        // The default cap leaves ordinary levels alone.
        assert_eq!(
            choose(&segs, &MergePolicy::default()).map(|v| v.len()),
            Some(4)
        );
    }

    #[test]
    fn heavily_deleted_segment_is_rewritten_alone() {
        let p = MergePolicy::default();
        let mut s = seg(7, 50);
        s.deleted_docs = 40;
        assert_eq!(choose(&[seg(1, 500), s], &p), Some(vec![7]));
        assert_eq!(choose_full(&[seg(1, 5)]), None);
        assert_eq!(choose_full(&[s]), Some(vec![7]));
        assert_eq!(choose_full(&[seg(3, 5), seg(1, 5)]), Some(vec![1, 3]));
    }

    #[test]
    fn choice_is_deterministic_under_reordering() {
        let p = MergePolicy::default();
        let a = [seg(1, 10), seg(2, 10), seg(3, 10), seg(4, 10), seg(5, 10)];
        let mut b = a;
        b.reverse();
        assert_eq!(choose(&a, &p), choose(&b, &p));
    }
}
