//! Ctrl-C during long calls. Calls run without the GIL; a `Watch` polls Python's signal handlers
//! (at most every 100 ms) from the library's callbacks and remembers the exception
//! (KeyboardInterrupt) they raised, so the operation can stop at a point where it changes
//! nothing: before a batch's publish, or between pairs/clusters.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use ndd_index::Error;
use pyo3::prelude::*;

const EVERY: Duration = Duration::from_millis(100);

/// The panic payload that unwinds an ingest from its progress callback (which cannot return an
/// error). It is raised with `resume_unwind` (no panic message) and caught by the binding.
pub struct Interrupted;

pub struct Watch {
    last: Mutex<Instant>,
    raised: Mutex<Option<PyErr>>,
}

impl Watch {
    pub fn new() -> Self {
        Watch {
            last: Mutex::new(Instant::now()),
            raised: Mutex::new(None),
        }
    }

    /// Runs Python's signal handlers when due (only the main thread runs them). True when one
    /// raised: the caller should stop.
    pub fn poll(&self) -> bool {
        {
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() < EVERY {
                return self.is_raised();
            }
            *last = Instant::now();
        }
        if self.is_raised() {
            return true;
        }
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            *self.raised.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            return true;
        }
        false
    }

    /// `poll` as a library result (for callbacks that may fail).
    pub fn check(&self) -> Result<(), Error> {
        if self.poll() {
            Err(Error::InvalidArgument("interrupted".into()))
        } else {
            Ok(())
        }
    }

    fn is_raised(&self) -> bool {
        self.raised
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The exception a signal handler raised, if any.
    pub fn take(&self) -> Option<PyErr> {
        self.raised.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}
