//! Prometheus metrics of the server: requests by route and status class, a latency histogram
//! per route, the writer's group commits, and index gauges read from the current snapshot at
//! scrape time (text exposition format 0.0.4).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The routes we count separately (anything else is `other`).
pub const ROUTES: [&str; 10] = [
    "query",
    "insert",
    "insert_batch",
    "delete",
    "document",
    "cluster",
    "stats",
    "healthz",
    "metrics",
    "other",
];

/// Upper bounds of the latency buckets, in seconds.
pub const BUCKETS: [f64; 13] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0,
];

#[derive(Default)]
struct Route {
    /// Answers by status class: 2xx, 3xx, 4xx, 5xx (index 0..4).
    by_class: [AtomicU64; 4],
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

/// Phases of a group commit: those of an add, then "writer".
pub const GROUP_PHASES: usize = crate::lifecycle::add::ADD_PHASES.len() + 1;

/// All counters; shared by every request (atomics, no lock).
#[derive(Default)]
pub struct Metrics {
    routes: [Route; ROUTES.len()],
    /// Group commits done by the writer, documents in them, and their time.
    pub groups: AtomicU64,
    pub group_docs: AtomicU64,
    pub group_micros: AtomicU64,
    /// Time of the group commits by phase ([`crate::lifecycle::add::ADD_PHASES`]), then
    /// the writer's own work after the add (merge policy, snapshot swap, answers).
    pub group_phase_micros: [AtomicU64; GROUP_PHASES],
    /// The start-up check of every segment block has finished (`/healthz` `warm`).
    pub warm: std::sync::atomic::AtomicBool,
    /// WAL syncs of the sync thread (each covers every group commit written before it).
    pub wal_syncs: AtomicU64,
    pub wal_sync_micros: AtomicU64,
    /// Requests a group took while waiting for more during the previous group's WAL sync
    /// (the writer's linger).
    pub linger_hits: AtomicU64,
    /// Segment merges published by the background merge thread, and their build time.
    pub merges: AtomicU64,
    pub merge_micros: AtomicU64,
    /// Background merges that failed (the index is unchanged by them).
    pub merge_failures: AtomicU64,
    /// Inserts answered 503 because another process held the writer lock too long.
    pub writer_busy: AtomicU64,
    /// Snapshots installed (own publishes and another process's, seen by the watcher).
    pub snapshots: AtomicU64,
    pub external_reloads: AtomicU64,
}

/// Index figures read at scrape time.
pub struct IndexGauges {
    pub live_documents: u64,
    pub doc_ids: u64,
    pub segments: u64,
    pub delta_documents: u64,
    pub writer_held: bool,
}

impl Metrics {
    /// Index of a route name in [`ROUTES`].
    pub fn route_index(name: &str) -> usize {
        ROUTES
            .iter()
            .position(|r| *r == name)
            .unwrap_or(ROUTES.len() - 1)
    }

    /// Records one answered request.
    pub fn observe(&self, route: usize, status: u16, took: Duration) {
        let r = &self.routes[route.min(ROUTES.len() - 1)];
        let class = match status {
            200..=299 => 0,
            300..=399 => 1,
            400..=499 => 2,
            _ => 3,
        };
        r.by_class[class].fetch_add(1, Relaxed);
        let secs = took.as_secs_f64();
        if let Some(b) = BUCKETS.iter().position(|&le| secs <= le) {
            r.buckets[b].fetch_add(1, Relaxed);
        }
        r.count.fetch_add(1, Relaxed);
        r.sum_micros.fetch_add(took.as_micros() as u64, Relaxed);
    }

    /// The text exposition.
    pub fn render(&self, g: &IndexGauges) -> String {
        let mut o = String::with_capacity(8192);
        o.push_str(
            "# HELP ndd_requests_total HTTP requests answered, by route and status class.\n",
        );
        o.push_str("# TYPE ndd_requests_total counter\n");
        for (name, r) in ROUTES.iter().zip(&self.routes) {
            for (i, class) in ["2xx", "3xx", "4xx", "5xx"].iter().enumerate() {
                let n = r.by_class[i].load(Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        o,
                        "ndd_requests_total{{route=\"{name}\",status=\"{class}\"}} {n}"
                    );
                }
            }
        }
        o.push_str("# HELP ndd_request_duration_seconds Server-side time per request (body read to answer).\n");
        o.push_str("# TYPE ndd_request_duration_seconds histogram\n");
        for (name, r) in ROUTES.iter().zip(&self.routes) {
            let count = r.count.load(Relaxed);
            if count == 0 {
                continue;
            }
            let mut cum = 0;
            for (le, b) in BUCKETS.iter().zip(&r.buckets) {
                cum += b.load(Relaxed);
                let _ = writeln!(
                    o,
                    "ndd_request_duration_seconds_bucket{{route=\"{name}\",le=\"{le}\"}} {cum}"
                );
            }
            let _ = writeln!(
                o,
                "ndd_request_duration_seconds_bucket{{route=\"{name}\",le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                o,
                "ndd_request_duration_seconds_sum{{route=\"{name}\"}} {}",
                r.sum_micros.load(Relaxed) as f64 / 1e6
            );
            let _ = writeln!(
                o,
                "ndd_request_duration_seconds_count{{route=\"{name}\"}} {count}"
            );
        }
        let counters = [
            (
                "ndd_group_commits_total",
                "Group commits (one synced catalog write each).",
                &self.groups,
            ),
            (
                "ndd_group_commit_documents_total",
                "Documents submitted through group commits.",
                &self.group_docs,
            ),
            (
                "ndd_writer_busy_total",
                "Writes answered 503: another process held the writer lock.",
                &self.writer_busy,
            ),
            (
                "ndd_snapshots_total",
                "Read snapshots installed.",
                &self.snapshots,
            ),
            (
                "ndd_merges_total",
                "Segment merges built off the writer and published.",
                &self.merges,
            ),
            (
                "ndd_merge_failures_total",
                "Background segment merges that failed (nothing published).",
                &self.merge_failures,
            ),
            (
                "ndd_external_reloads_total",
                "Snapshots reopened after another process published.",
                &self.external_reloads,
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(
                o,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Relaxed)
            );
        }
        {
            use crate::query::probe_counts as q;
            let probe = [
                (
                    "ndd_query_searches_total",
                    "Searches of the snapshot (queries and the checks of inserts).",
                    &q::SEARCHES,
                ),
                (
                    "ndd_query_segment_lookups_total",
                    "(probe key, segment) posting lookups of those searches.",
                    &q::SEGMENT_LOOKUPS,
                ),
                (
                    "ndd_query_posting_lists_total",
                    "Lookups that found a posting list (a block read and decoded).",
                    &q::LISTS_FOUND,
                ),
                (
                    "ndd_query_postings_visited_total",
                    "Posting entries visited by those searches.",
                    &q::POSTINGS_VISITED,
                ),
                (
                    "ndd_query_candidates_total",
                    "Candidates those searches verified.",
                    &q::CANDIDATES,
                ),
            ];
            for (name, help, v) in probe {
                let _ = writeln!(
                    o,
                    "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                    v.load(Relaxed)
                );
            }
        }
        let _ = writeln!(
            o,
            "# HELP ndd_merge_seconds_total Time the background merges took to write their segments.\n# TYPE ndd_merge_seconds_total counter\nndd_merge_seconds_total {}",
            self.merge_micros.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(
            o,
            "# HELP ndd_group_commit_seconds_total Time spent in group commits.\n# TYPE ndd_group_commit_seconds_total counter\nndd_group_commit_seconds_total {}",
            self.group_micros.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(
            o,
            "# HELP ndd_wal_syncs_total WAL syncs answering group commits.\n# TYPE ndd_wal_syncs_total counter\nndd_wal_syncs_total {}\n# HELP ndd_wal_sync_seconds_total Time in WAL syncs.\n# TYPE ndd_wal_sync_seconds_total counter\nndd_wal_sync_seconds_total {}",
            self.wal_syncs.load(Relaxed),
            self.wal_sync_micros.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(
            o,
            "# HELP ndd_group_linger_requests_total Requests a group commit gathered while the previous group's WAL sync was in flight.\n# TYPE ndd_group_linger_requests_total counter\nndd_group_linger_requests_total {}",
            self.linger_hits.load(Relaxed)
        );
        let _ = writeln!(
            o,
            "# HELP ndd_group_phase_seconds_total Time of group commits by phase.\n# TYPE ndd_group_phase_seconds_total counter"
        );
        let names = crate::lifecycle::add::ADD_PHASES.iter().chain(&["writer"]);
        for (name, v) in names.zip(&self.group_phase_micros) {
            let _ = writeln!(
                o,
                "ndd_group_phase_seconds_total{{phase=\"{name}\"}} {}",
                v.load(Relaxed) as f64 / 1e6
            );
        }
        let gauges = [
            (
                "ndd_index_documents",
                "Live documents in the current snapshot.",
                g.live_documents,
            ),
            (
                "ndd_index_doc_ids",
                "Allocated document ids (live, deleted, replaced).",
                g.doc_ids,
            ),
            (
                "ndd_index_segments",
                "Segments of the current snapshot (the delta included).",
                g.segments,
            ),
            (
                "ndd_index_delta_documents",
                "Documents in the delta (online adds not yet folded).",
                g.delta_documents,
            ),
            (
                "ndd_writer_held",
                "1 while this server holds the index's writer lock.",
                g.writer_held as u64,
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative_and_counts_match() {
        let m = Metrics::default();
        let q = Metrics::route_index("query");
        m.observe(q, 200, Duration::from_micros(80));
        m.observe(q, 200, Duration::from_micros(700));
        m.observe(q, 400, Duration::from_secs(9));
        let g = IndexGauges {
            live_documents: 5,
            doc_ids: 6,
            segments: 2,
            delta_documents: 1,
            writer_held: false,
        };
        let text = m.render(&g);
        assert!(text.contains("ndd_requests_total{route=\"query\",status=\"2xx\"} 2"));
        assert!(text.contains("ndd_requests_total{route=\"query\",status=\"4xx\"} 1"));
        assert!(
            text.contains("ndd_request_duration_seconds_bucket{route=\"query\",le=\"0.0001\"} 1")
        );
        assert!(
            text.contains("ndd_request_duration_seconds_bucket{route=\"query\",le=\"0.001\"} 2")
        );
        assert!(text.contains("ndd_request_duration_seconds_bucket{route=\"query\",le=\"5\"} 2"));
        assert!(text.contains("ndd_request_duration_seconds_bucket{route=\"query\",le=\"+Inf\"} 3"));
        assert!(text.contains("ndd_index_delta_documents 1"));
        assert!(!text.contains("route=\"insert\""));
    }
}
