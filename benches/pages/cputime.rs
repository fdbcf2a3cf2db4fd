//! A criterion measurement of the benchmark thread's CPU time (CLOCK_THREAD_CPUTIME_ID) instead
//! of wall time. The benches run on a shared 2-core machine where other builds come and go;
//! time spent waiting for a core is then not charged to the code being measured, so before/after
//! comparisons stay meaningful under load (caches and memory bandwidth are still shared).

use criterion::measurement::{Measurement, ValueFormatter, WallTime};

pub struct ThreadCpuTime;

/// Nanoseconds of CPU time this thread has used.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

static WALL: WallTime = WallTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }

    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }

    /// Values are nanoseconds, like wall time's, so its formatter (and MiB/s) apply.
    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}
