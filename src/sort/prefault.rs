//! Big fresh buffers faulted in ahead, many pages in one call (`MADV_POPULATE_WRITE`,
//! Linux 5.14+) instead of one trap per 4 KiB page as they are first written: the sort
//! buffer, the postings partition, the format-3 rank array and the prefix self-join's arrays
//! are tens of MB written once. Page faults were a tenth of an ingest's CPU, and these
//! buffers two fifths of them (BENCHMARKS.md, "HTML to pairs: page faults of fresh buffers,
//! hand-offs, the index's creation"). The kernel still zeroes every page: a populated page
//! costs about two thirds of a faulted one on the measuring machine.
//!
//! Only pages inside the buffer's allocation that the caller is about to write are
//! populated, so resident memory is what the writes would fault in anyway (the sort buffer
//! goes ahead by [`STEP`] at most). Nothing changes in content or allocation; on a kernel
//! without the advice (or on other systems) the call does nothing and the writes fault as
//! before. (Transparent huge pages, `MADV_HUGEPAGE`, were measured too: 2 MiB faults are
//! cheaper when the kernel has warm huge pages, but on this virtual machine a cold one costs
//! up to 0.2 s of system time an ingest; not used.)

/// Drops `x` on a thread of its own, so that the caller goes on while a large buffer's pages
/// are given back (unmapping ~100 MB takes ~10 ms); if no thread can be started, here.
pub fn drop_on_a_thread<T: Send + 'static>(x: T) {
    let _ = std::thread::Builder::new()
        .name("ndd-free".into())
        .spawn(move || drop(x));
}

/// Bytes the sort buffer is populated ahead of its writes.
pub const STEP: usize = 4 << 20;

/// Below this many bytes a range is left to fault as it is written.
const MIN_BYTES: usize = 64 << 10;

const PAGE: usize = 4096;

/// `Vec::with_capacity(n)` with its first `n` elements' pages faulted in: for a buffer the
/// caller is about to write whole.
pub fn with_capacity<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    populate(&v, 0, n);
    v
}

/// [`with_capacity`] with the pages faulted in on every core, a [`STEP`] at a time: for a
/// buffer of tens of MB filled right after (the kernel zeroes each page; one core alone
/// took 30-40 ms for the postings partition's 48 MB).
pub fn with_capacity_par<T>(n: usize) -> Vec<T> {
    use rayon::prelude::*;
    let v: Vec<T> = Vec::with_capacity(n);
    let step = (STEP / std::mem::size_of::<T>().max(1)).max(1);
    let pieces = n.div_ceil(step);
    if pieces <= 1 {
        populate(&v, 0, n);
        return v;
    }
    let (base, cap, sz) = (v.as_ptr() as usize, v.capacity(), std::mem::size_of::<T>());
    (0..pieces).into_par_iter().for_each(|k| {
        let (from, to) = (k * step, ((k + 1) * step).min(n).min(cap));
        if let Some((first, len)) = whole_pages(base + from * sz, base + to * sz) {
            populate_range(first, len);
        }
    });
    v
}

/// Faults in the whole pages of `v`'s elements `from..to` (of its capacity, clamped) in one
/// call. The elements' values are untouched (only pages not yet present are zero-filled).
pub fn populate<T>(v: &Vec<T>, from: usize, to: usize) {
    let to = to.min(v.capacity());
    if to <= from {
        return;
    }
    let sz = std::mem::size_of::<T>();
    let base = v.as_ptr() as usize;
    if let Some((first, len)) = whole_pages(base + from * sz, base + to * sz) {
        populate_range(first, len);
    }
}

/// `u64`s appended while there are at most `max` of them (beyond: none kept, for good), with
/// the pages of the reserved capacity (up to `max` values) faulted in ahead of the writes,
/// [`STEP`] bytes at a time: the builder's kept POSTINGS keys and ingest's kept feature hashes.
pub struct Bounded {
    v: Vec<u64>,
    max: usize,
    ready: usize,
    over: bool,
}

impl Bounded {
    /// Nothing kept yet, at most `max_bytes / 8` values.
    pub fn new(max_bytes: u64) -> Bounded {
        Bounded {
            v: Vec::new(),
            max: usize::try_from(max_bytes / 8).unwrap_or(usize::MAX),
            ready: 0,
            over: false,
        }
    }

    /// Most values kept.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The values kept so far (none once they passed `max`).
    pub fn values(&self) -> &[u64] {
        &self.v
    }

    /// Reserves room for `n` values (address space; pages are faulted in as values come),
    /// before the first append.
    pub fn reserve_exact(&mut self, n: usize) {
        if self.v.capacity() == 0 && !self.over {
            self.v.reserve_exact(n);
        }
    }

    /// Appends `x`; false (and nothing kept from then on) when the values would pass `max`.
    pub fn extend(&mut self, x: &[u64]) -> bool {
        if self.over {
            return false;
        }
        let end = self.v.len() + x.len();
        if end > self.max {
            self.over = true;
            self.v = Vec::new();
            return false;
        }
        if end > self.ready && end <= self.v.capacity() {
            let to = (self.ready + STEP / 8)
                .max(end)
                .min(self.v.capacity())
                .min(self.max);
            populate(&self.v, self.ready.max(self.v.len()), to);
            self.ready = to;
        }
        self.v.extend_from_slice(x);
        true
    }

    /// The values, unless they passed `max`.
    pub fn into_vec(self) -> Option<Vec<u64>> {
        (!self.over).then_some(self.v)
    }
}

/// The whole pages of `[start, end)`: `(first, bytes)`, None below [`MIN_BYTES`].
fn whole_pages(start: usize, end: usize) -> Option<(usize, usize)> {
    let first = start.checked_add(PAGE - 1)? & !(PAGE - 1);
    let last = end & !(PAGE - 1);
    (last > first && last - first >= MIN_BYTES).then(|| (first, last - first))
}

#[cfg(target_os = "linux")]
fn populate_range(first: usize, len: usize) {
    /// `MADV_POPULATE_WRITE` (Linux 5.14, uapi/asm-generic/mman-common.h).
    const MADV_POPULATE_WRITE: libc::c_int = 23;
    // SAFETY: page-aligned whole pages inside one live allocation of ours; populating for
    // write changes no content (present pages are left alone, missing ones come in zeroed,
    // as the first write would fault them) and no mapping. An error (an older kernel's
    // EINVAL) leaves the pages to fault as before.
    unsafe {
        libc::madvise(first as *mut libc::c_void, len, MADV_POPULATE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn populate_range(_first: usize, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_pages_inside_only() {
        assert_eq!(whole_pages(0, 1 << 20), Some((0, 1 << 20)));
        assert_eq!(
            whole_pages(16, (1 << 20) + 16),
            Some((PAGE, (1 << 20) - PAGE))
        );
        assert_eq!(whole_pages(PAGE + 1, PAGE + MIN_BYTES), None);
        assert_eq!(whole_pages(5 * PAGE, 5 * PAGE), None);
        assert_eq!(whole_pages(usize::MAX - 10, usize::MAX), None);
    }

    #[test]
    fn populated_buffers_keep_and_take_what_is_written() {
        for n in [0usize, 1, 1000, MIN_BYTES / 8 + 3, 3 << 20] {
            let mut v: Vec<u64> = with_capacity(n);
            assert!(v.capacity() >= n);
            v.extend((0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
            let mut p: Vec<u64> = with_capacity_par(n);
            assert!(p.capacity() >= n);
            p.extend((0..n as u64).map(|i| i ^ 0x5555));
            assert!(p.iter().enumerate().all(|(i, &x)| x == i as u64 ^ 0x5555));
            // Populating written elements again leaves them as they are.
            populate(&v, 0, n);
            populate(&v, n / 3, n + 10);
            assert_eq!(v.len(), n);
            assert!(v
                .iter()
                .enumerate()
                .all(|(i, &x)| x == (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        }
    }
}
