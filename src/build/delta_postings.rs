//! The delta's postings as ONE in-memory map, shared by every snapshot of a writer's lineage.
//!
//! A snapshot holds the delta (online adds not folded yet) as a few small segments ("pieces",
//! `View::after_add`), and a probe key used to cost one segment lookup per piece (block search,
//! key filter, block). With the pieces' postings also in one hash map, a probe key costs one
//! map lookup for the whole delta however many pieces it is in (`View::for_each_posting`).
//!
//! **Sharing without copying.** Doc ids only grow, so the map is append-only: the writer
//! appends each add's documents, and a snapshot reads only the documents below its own bound
//! (`below`: the end of the delta it holds), so appends made after it was taken are invisible
//! to it. Readers take no lock: every cell is an atomic; a list's new node is written before
//! the slot's head points at it (release/acquire), and a snapshot reaches readers through a
//! lock (the server's pointer swap), after the appends it covers. Nothing is ever removed; a
//! fold starts a new map, and a map that is full (or asked to append ids at or below ones it
//! holds, e.g. after an add failed before its publish) is rebuilt by the caller from the
//! snapshot's pieces ([`DeltaPostings::append_segment`] says so by returning false).
//!
//! Memory: 16 bytes a slot (key, head), two slots per posting of capacity, and 8 bytes a
//! posting (doc, next): 40 bytes a posting at capacity, which is 1-2x the postings held.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::segment::{self, Segment};

/// One hash slot: a key and 1 + the index of its newest node (0: the slot is free).
#[derive(Default)]
struct Slot {
    key: AtomicU64,
    head: AtomicU32,
}

/// The append-only map key -> delta documents (see the module docs).
pub struct DeltaPostings {
    slots: Box<[Slot]>,
    /// `(doc << 32) | (1 + next node, 0 = end of the list)`.
    nodes: Box<[AtomicU64]>,
    /// `64 - log2(slots)`: a key's first slot is the top bits of a multiplicative hash.
    shift: u32,
    /// Writer state, under a lock readers never take.
    w: Mutex<WriterState>,
}

#[derive(Default)]
struct WriterState {
    nodes_used: usize,
    slots_used: usize,
    /// 1 + the largest document appended (0: none).
    filled: u32,
}

/// Smallest node capacity of a map.
const MIN_NODES: usize = 1 << 14;

impl DeltaPostings {
    /// An empty map with room for at least `postings` postings.
    pub fn with_capacity(postings: usize) -> DeltaPostings {
        let nodes = postings.max(MIN_NODES).next_power_of_two();
        let slots = 2 * nodes;
        DeltaPostings {
            slots: (0..slots).map(|_| Slot::default()).collect(),
            nodes: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
            shift: 64 - slots.trailing_zeros(),
            w: Mutex::new(WriterState::default()),
        }
    }

    /// Postings the map has room for.
    pub fn capacity(&self) -> usize {
        self.nodes.len()
    }

    /// Postings held (all appended, whatever a snapshot's bound).
    pub fn len(&self) -> usize {
        self.lock().nodes_used
    }

    /// True when nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WriterState> {
        self.w.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A key's first slot: its top bits. Keys are uniform 64-bit hashes (sampled ones,
    /// `--sample mod`, share low bits, not high ones), and slots in key order make an append
    /// (a piece's POSTINGS, in key order) and a probe set (sorted keys) walk the table
    /// forward instead of at random.
    #[inline]
    fn first_slot(&self, key: u64) -> usize {
        (key >> self.shift) as usize
    }

    /// Calls `f` with every document below `below` whose postings hold `key` (newest first).
    #[inline]
    pub fn for_each(&self, key: u64, below: u32, mut f: impl FnMut(u32)) {
        let mask = self.slots.len() - 1;
        let mut i = self.first_slot(key);
        loop {
            let slot = &self.slots[i];
            let head = slot.head.load(Ordering::Acquire);
            if head == 0 {
                return;
            }
            if slot.key.load(Ordering::Relaxed) == key {
                let mut n = head;
                while n != 0 {
                    let v = self.nodes[(n - 1) as usize].load(Ordering::Acquire);
                    let doc = (v >> 32) as u32;
                    if doc < below {
                        f(doc);
                    }
                    n = v as u32;
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Appends the POSTINGS of `seg`, a delta piece whose documents all come after the ones
    /// appended so far (its doc range starts at `doc_lo`), for a view that reads the map
    /// below `below` (the documents appended are all below it). False, appending nothing,
    /// when the map has no room for them, holds documents at or above `below` (appended for
    /// another view, e.g. by an add that failed before its publish) or at or above `doc_lo`:
    /// the caller then builds a new map ([`DeltaPostings::of_segments`]).
    pub fn append_segment(
        &self,
        seg: &Segment,
        doc_lo: u32,
        postings: u64,
        below: u32,
    ) -> Result<bool> {
        let mut w = self.lock();
        let postings = postings as usize;
        if w.filled > below
            || doc_lo < w.filled
            || w.nodes_used + postings > self.nodes.len()
            || w.slots_used + postings > self.slots.len() / 2
        {
            return Ok(false);
        }
        let mask = self.slots.len() - 1;
        let mut docs = Vec::new();
        for item in seg.iter(segment::POSTINGS) {
            let (key, v) = item?;
            docs.clear();
            segment::decode_postings(v)?.for_each(|d| docs.push(d));
            if w.nodes_used + docs.len() > self.nodes.len() || docs.iter().any(|&d| d < doc_lo) {
                // The entry says fewer postings than the segment holds, or a document below
                // its range: a new map will be built from the segments as they are. (What was
                // appended so far lies at or above `doc_lo`, beyond every snapshot's bound.)
                w.filled = u32::MAX;
                return Ok(false);
            }
            let mut i = self.first_slot(key);
            let slot = loop {
                let slot = &self.slots[i];
                if slot.head.load(Ordering::Relaxed) == 0 {
                    slot.key.store(key, Ordering::Relaxed);
                    w.slots_used += 1;
                    break slot;
                }
                if slot.key.load(Ordering::Relaxed) == key {
                    break slot;
                }
                i = (i + 1) & mask;
            };
            let mut head = slot.head.load(Ordering::Relaxed);
            for &d in &docs {
                let n = w.nodes_used;
                w.nodes_used += 1;
                self.nodes[n].store(((d as u64) << 32) | head as u64, Ordering::Release);
                head = n as u32 + 1;
                w.filled = w.filled.max(d + 1);
            }
            slot.head.store(head, Ordering::Release);
        }
        Ok(true)
    }

    /// A new map of the POSTINGS of `pieces` (`(segment, doc_lo, postings)`, in doc order),
    /// with room for twice their postings.
    pub fn of_segments<'a>(
        pieces: impl IntoIterator<Item = (&'a Segment, u32, u64)> + Clone,
    ) -> Result<DeltaPostings> {
        let total: u64 = pieces.clone().into_iter().map(|p| p.2).sum();
        let map = DeltaPostings::with_capacity(2 * total as usize);
        for (seg, lo, n) in pieces {
            if !map.append_segment(seg, lo, n, lo)? {
                return Err(Error::corrupt(
                    seg.path(),
                    0,
                    format!(
                        "delta piece from doc {lo}: more postings than its {n}, or not in doc order"
                    ),
                ));
            }
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::methods::MethodOptions;
    use crate::store::delta::DeltaDoc;

    /// A delta piece of `docs` (id, features) as `build::delta` writes it, with its entry's
    /// doc_lo and postings.
    fn piece(dir: &std::path::Path, docs: &[(u32, Vec<u64>)]) -> (Segment, u32, u64) {
        let docs: Vec<(u32, DeltaDoc)> = docs
            .iter()
            .map(|(d, f)| {
                let dd = DeltaDoc {
                    has_words: true,
                    features: f.clone(),
                    ..DeltaDoc::default()
                };
                (*d, dd)
            })
            .collect();
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!("p{}.ndds", N.fetch_add(1, Ordering::Relaxed));
        let e =
            super::super::delta::write_temp(dir, &name, &docs, &MethodOptions::default()).unwrap();
        (
            Segment::open(dir.join(&name)).unwrap(),
            e.doc_lo,
            e.postings,
        )
    }

    fn docs_of(range: std::ops::Range<u32>, seed: u64) -> Vec<(u32, Vec<u64>)> {
        // Keys from a small space (many shared between documents), some with equal low bits
        // and some with equal top bits (one first slot: long probe runs).
        range
            .map(|d| {
                let mut f: Vec<u64> = (0..40u64)
                    .map(|i| {
                        let x = (d as u64 * 7 + i * 13 + seed) % 300;
                        if x % 3 == 0 {
                            x << 40
                        } else {
                            x.wrapping_mul(0x2545_F491_4F6C_DD1D)
                        }
                    })
                    .collect();
                f.sort_unstable();
                f.dedup();
                (d, f)
            })
            .collect()
    }

    fn expected(all: &[(u32, Vec<u64>)], key: u64, below: u32) -> Vec<u32> {
        let mut v: Vec<u32> = all
            .iter()
            .filter(|(d, f)| *d < below && f.binary_search(&key).is_ok())
            .map(|(d, _)| *d)
            .collect();
        v.sort_unstable();
        v
    }

    fn got(m: &DeltaPostings, key: u64, below: u32) -> Vec<u32> {
        let mut v = Vec::new();
        m.for_each(key, below, |d| v.push(d));
        v.sort_unstable();
        v
    }

    /// Appended pieces (with gaps between their id ranges) answer every key as the documents
    /// hold it, each snapshot bound seeing exactly the documents below it; absent keys have
    /// no documents.
    #[test]
    fn the_map_answers_as_the_pieces_below_each_bound() {
        let dir = tempfile::tempdir().unwrap();
        let ranges = [0..5u32, 5..9, 20..31, 31..32, 40..60];
        let m = DeltaPostings::with_capacity(64);
        let mut all = Vec::new();
        let mut below = 0;
        for (i, r) in ranges.iter().enumerate() {
            let docs = docs_of(r.clone(), i as u64);
            let (seg, lo, n) = piece(dir.path(), &docs);
            assert!(m.append_segment(&seg, lo, n, below).unwrap(), "piece {i}");
            all.extend(docs);
            below = r.end;
            for bound in [0, 3, 5, 9, 25, 31, 32, 45, 60, 1000] {
                for key in
                    (0..300u64).flat_map(|x| [x << 40, x.wrapping_mul(0x2545_F491_4F6C_DD1D)])
                {
                    assert_eq!(got(&m, key, bound), expected(&all, key, bound), "key {key}");
                }
            }
        }
        assert!(got(&m, 12345, u32::MAX).is_empty());
        let total: usize = all.iter().map(|(_, f)| f.len()).sum();
        assert_eq!(m.len(), total);
        // Built at once from the same pieces: the same answers.
        let pieces: Vec<(Segment, u32, u64)> = ranges
            .iter()
            .enumerate()
            .map(|(i, r)| piece(dir.path(), &docs_of(r.clone(), i as u64)))
            .collect();
        let b = DeltaPostings::of_segments(pieces.iter().map(|(s, l, n)| (s, *l, *n))).unwrap();
        assert!(b.capacity() >= 2 * total);
        for key in (0..300u64).flat_map(|x| [x << 40, x.wrapping_mul(0x2545_F491_4F6C_DD1D)]) {
            assert_eq!(got(&b, key, 60), expected(&all, key, 60));
        }
    }

    /// The map refuses (appending nothing) a piece it has no room for, one whose ids are not
    /// above the ones it holds, and an append for a view that does not see all it holds.
    #[test]
    fn the_map_refuses_what_it_cannot_append() {
        let dir = tempfile::tempdir().unwrap();
        let m = DeltaPostings::with_capacity(MIN_NODES);
        let (seg, lo, n) = piece(dir.path(), &docs_of(10..20, 1));
        assert!(m.append_segment(&seg, lo, n, 0).unwrap());
        let held = m.len();
        // Ids at or below the ones held (an add that failed before its publish reuses them).
        let (again, lo2, n2) = piece(dir.path(), &docs_of(15..25, 2));
        assert!(!m.append_segment(&again, lo2, n2, 20).unwrap());
        // A view whose bound is below what the map holds (another view appended since).
        let (next, lo3, n3) = piece(dir.path(), &docs_of(30..40, 3));
        assert!(!m.append_segment(&next, lo3, n3, 15).unwrap());
        // No room.
        assert!(!m.append_segment(&next, lo3, MIN_NODES as u64, 20).unwrap());
        assert_eq!(m.len(), held);
        assert!(m.append_segment(&next, lo3, n3, 20).unwrap());
    }

    /// Readers bounded below what is appended meanwhile see exactly their documents while the
    /// writer appends on another thread.
    #[test]
    fn readers_see_their_documents_while_the_writer_appends() {
        let dir = tempfile::tempdir().unwrap();
        let first = docs_of(0..50, 9);
        let later: Vec<Vec<(u32, Vec<u64>)>> = (1..40u32)
            .map(|i| docs_of(i * 50..i * 50 + 50, i as u64))
            .collect();
        let (seg, lo, n) = piece(dir.path(), &first);
        let pieces: Vec<(Segment, u32, u64)> = later.iter().map(|d| piece(dir.path(), d)).collect();
        let m = std::sync::Arc::new(DeltaPostings::with_capacity(1 << 18));
        assert!(m.append_segment(&seg, lo, n, 0).unwrap());
        let keys: Vec<u64> = (0..300u64)
            .flat_map(|x| [x << 40, x.wrapping_mul(0x2545_F491_4F6C_DD1D)])
            .collect();
        let want: Vec<Vec<u32>> = keys.iter().map(|&k| expected(&first, k, 50)).collect();
        let r = std::sync::Arc::clone(&m);
        let reader = std::thread::spawn(move || {
            for _ in 0..200 {
                for (k, w) in keys.iter().zip(&want) {
                    assert_eq!(&got(&r, *k, 50), w);
                }
            }
        });
        let mut below = 50;
        for (s, lo, n) in &pieces {
            assert!(m.append_segment(s, *lo, *n, below).unwrap());
            below = lo + 50;
        }
        reader.join().unwrap();
    }
}
