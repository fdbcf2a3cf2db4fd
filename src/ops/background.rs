//! Yielding to a server on the same machine: a nightly `ingest` (or `compact`) is batch work,
//! and `--background` lowers the CPU priority (nice 19) and the IO priority (class idle, or
//! best-effort level 7 where idle is refused) of every thread of the process. Threads started
//! later (the sort's and matcher's workers, RocksDB's flush and compaction threads) inherit
//! both. The Linux scheduler then gives a nice-0 server about 70 times the CPU share of the
//! batch whenever both want a core; the batch still gets every idle cycle.

use std::io;

/// The nice value of a background process (the lowest priority).
pub const BACKGROUND_NICE: i32 = 19;

/// IO scheduling classes of `ioprio_set(2)`.
pub const IOPRIO_CLASS_BE: u32 = 2;
pub const IOPRIO_CLASS_IDLE: u32 = 3;
const IOPRIO_CLASS_SHIFT: u32 = 13;
const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// A thread's scheduling priorities, as the kernel reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// Nice value (-20..=19).
    pub nice: i32,
    /// IO class (0 none, 1 realtime, 2 best-effort, 3 idle).
    pub io_class: u32,
    /// IO level within the class (0..=7).
    pub io_level: u32,
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let class = match self.io_class {
            0 => "none",
            1 => "realtime",
            2 => "best-effort",
            3 => "idle",
            _ => "unknown",
        };
        write!(f, "nice {}, io class {class}", self.nice)?;
        if self.io_class == IOPRIO_CLASS_BE || self.io_class == 1 {
            write!(f, " level {}", self.io_level)?;
        }
        Ok(())
    }
}

fn ioprio_set(tid: libc::pid_t, class: u32, level: u32) -> io::Result<()> {
    let prio = ((class << IOPRIO_CLASS_SHIFT) | level) as libc::c_int;
    // SAFETY: ioprio_set takes three integers and touches no memory of ours.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid, prio) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The priorities of thread `tid` (0: the calling thread).
pub fn thread_priority(tid: libc::pid_t) -> io::Result<Priority> {
    // getpriority may legitimately return -1: errno tells an error apart.
    // SAFETY: plain syscalls on integers; errno is thread-local.
    let nice = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t)
    };
    if nice == -1 {
        let e = io::Error::last_os_error();
        if e.raw_os_error().unwrap_or(0) != 0 {
            return Err(e);
        }
    }
    // SAFETY: as above.
    let io = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, tid) };
    if io < 0 {
        return Err(io::Error::last_os_error());
    }
    let io = io as u32;
    Ok(Priority {
        nice,
        io_class: io >> IOPRIO_CLASS_SHIFT,
        io_level: io & ((1 << IOPRIO_CLASS_SHIFT) - 1),
    })
}

/// Lowers one thread (`tid`, 0: the calling thread) to background priority: nice
/// [`BACKGROUND_NICE`] and IO class idle, or best-effort 7 when idle is refused. Returns the
/// priorities read back from the kernel.
pub fn lower_thread(tid: libc::pid_t) -> io::Result<Priority> {
    // SAFETY: setpriority on an integer id; raising one's own nice value needs no privilege.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if ioprio_set(tid, IOPRIO_CLASS_IDLE, 0).is_err() {
        ioprio_set(tid, IOPRIO_CLASS_BE, 7)?;
    }
    thread_priority(tid)
}

/// Lowers every thread of this process to background priority (call it first thing, before
/// worker threads start: those inherit it). Returns the calling thread's priorities as read
/// back from the kernel; an error names the thread that could not be lowered.
pub fn run_in_background() -> crate::Result<Priority> {
    let err = |what: String, e: io::Error| crate::Error::io(what, e);
    let tasks =
        std::fs::read_dir("/proc/self/task").map_err(|e| err("/proc/self/task".into(), e))?;
    for t in tasks.flatten() {
        let Some(tid) = t
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        match lower_thread(tid) {
            Ok(_) => {}
            // The thread ended meanwhile.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => return Err(err(format!("<priority of thread {tid}>"), e)),
        }
    }
    thread_priority(0).map_err(|e| err("<priority of this thread>".into(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nice value of the calling thread from /proc (field 19 of its stat line), independent
    /// of getpriority.
    fn proc_nice() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // The command name (field 2) may hold spaces: fields are counted after its ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn a_lowered_thread_reads_back_nice_19_and_low_io_priority() {
        // In a thread of its own: the test harness's other threads keep their priority.
        std::thread::spawn(|| {
            let before = thread_priority(0).unwrap();
            assert_eq!(proc_nice(), before.nice);
            let p = lower_thread(0).unwrap();
            assert_eq!(p.nice, BACKGROUND_NICE);
            assert_eq!(
                proc_nice(),
                BACKGROUND_NICE,
                "/proc disagrees with getpriority"
            );
            assert!(
                p.io_class == IOPRIO_CLASS_IDLE
                    || (p.io_class == IOPRIO_CLASS_BE && p.io_level == 7),
                "{p}"
            );
            assert_eq!(thread_priority(0).unwrap(), p);
            // A thread it starts inherits both.
            let child = std::thread::spawn(|| (thread_priority(0).unwrap(), proc_nice()))
                .join()
                .unwrap();
            assert_eq!(child, (p, BACKGROUND_NICE));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn priorities_print_readably() {
        let p = Priority {
            nice: 19,
            io_class: IOPRIO_CLASS_IDLE,
            io_level: 0,
        };
        assert_eq!(p.to_string(), "nice 19, io class idle");
        let p = Priority {
            nice: 19,
            io_class: IOPRIO_CLASS_BE,
            io_level: 7,
        };
        assert_eq!(p.to_string(), "nice 19, io class best-effort level 7");
    }
}
