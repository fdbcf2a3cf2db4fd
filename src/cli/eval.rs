//! `ndd-index eval` (precision, recall and F1 of each method against a truth file) and
//! `ndd-index tune` (smallest adaptive sampling ratios reaching a precision target).

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use ndd_index::eval::{self, tune, EvalRow, Truth};
use ndd_index::fingerprint::adaptive::SizeGroups;
use ndd_index::method::Method;
use ndd_index::{Error, Index, Threshold};

use super::{stdout_err as out_err, IndexArg};

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Truth: `key_a<TAB>key_b<TAB>jaccard` pairs or `key<TAB>label` lines, with a header.
    #[arg(long, value_name = "FILE")]
    truth: PathBuf,
    /// `doc_id<TAB>path` manifest: the truth's first two columns are doc ids (the shared
    /// corpus's truth.tsv and manifest.tsv).
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// Thresholds, comma-separated (only shingle depends on it; positives of pair truth do).
    #[arg(long, default_value = "0.8", value_delimiter = ',')]
    thresholds: Vec<Threshold>,
    /// Methods, comma-separated (default: every method the index stores data for).
    #[arg(long, value_delimiter = ',')]
    method: Vec<Method>,
    /// Also draw the evaluation's charts into FILE (one SVG): scores by method, P and R
    /// against T (two thresholds or more), same-site vs different-site, found ratio (label
    /// truth), Henzinger's C-threshold curve (henzinger evaluated).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

pub fn run(a: EvalArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    let truth = Truth::load(&a.truth, a.manifest.as_deref())?;
    let methods = if a.method.is_empty() {
        Method::ALL.to_vec()
    } else {
        a.method.clone()
    };
    let warning = eval::unmatched_warning(&index, &truth)?;
    if let Some(w) = &warning {
        eprintln!("warning: {w}");
    }
    let (rows, skipped) = eval::evaluate(&index, &truth, &methods, &a.thresholds)?;
    // Henzinger's protocol: the C thresholds chosen on one half of the pairs, tested on the
    // other (only when henzinger is evaluated and the index stores its data).
    let split = if methods.contains(&Method::Henzinger)
        && !skipped.iter().any(|(m, _)| *m == Method::Henzinger)
    {
        eval::sites::henzinger_split(&index, &truth, &a.thresholds)?
    } else {
        Vec::new()
    };
    if let Some(p) = &a.plot {
        let title = format!("ndd-index eval: {}", a.truth.display());
        let svg = eval::plot::figure(&rows, &split, &title).render();
        super::plot::write_atomic(p, &svg)?;
    }
    let mut out = io::stdout().lock();
    if a.ix.json {
        let skipped: Vec<_> = skipped
            .iter()
            .map(|(m, why)| serde_json::json!({"method": m, "reason": why}))
            .collect();
        let mut v = serde_json::json!({"rows": rows, "skipped": skipped});
        if !split.is_empty() {
            v["henzinger_split"] = serde_json::json!(split);
        }
        if let Some(w) = warning {
            v["warning"] = serde_json::json!(w);
        }
        writeln!(out, "{v}").map_err(out_err)?;
        return Ok(());
    }
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
    writeln!(
        out,
        "method\tT\tfound\tpositives\ttp\tP\tR\tF1\tseconds\tmean_err\tcorr\tfound_ratio\tclusters/true"
    )
    .map_err(out_err)?;
    for r in &rows {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\t{:.4}\t{:.3}\t{}\t{}\t{}\t{}",
            r.method,
            r.threshold,
            r.found,
            r.positives,
            r.true_positives,
            r.precision,
            r.recall,
            r.f1,
            r.seconds,
            opt(r.mean_abs_error),
            opt(r.correlation),
            opt(r.found_ratio),
            opt(r.clusters_per_true_cluster)
        )
        .map_err(out_err)?;
    }
    for (m, why) in &skipped {
        writeln!(out, "# {m} skipped: {why}").map_err(out_err)?;
    }
    print_size_groups(&mut out, &rows)?;
    print_sites(&mut out, &rows, &split)?;
    Ok(())
}

/// The same-site / different-site table of the rows, and Henzinger's split-half protocol.
fn print_sites(
    out: &mut impl Write,
    rows: &[EvalRow],
    split: &[eval::HenzingerSplit],
) -> Result<(), Error> {
    writeln!(
        out,
        "# by site (same: both documents on one site)\nmethod\tT\tsame_found\tsame_pos\tsame_tp\tsame_P\tsame_R\tdiff_found\tdiff_pos\tdiff_tp\tdiff_P\tdiff_R"
    )
    .map_err(out_err)?;
    for r in rows {
        let (s, d) = (&r.same_site, &r.different_site);
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\t{}\t{}\t{}\t{:.4}\t{:.4}",
            r.method,
            r.threshold,
            s.found,
            s.positives,
            s.true_positives,
            s.precision,
            s.recall,
            d.found,
            d.positives,
            d.true_positives,
            d.precision,
            d.recall
        )
        .map_err(out_err)?;
    }
    for h in split {
        writeln!(
            out,
            "# henzinger split-half at T={}: C >= {}/384 across sites, combined C >= {}/384 within (max F1 on the training half)\nhalf\tpart\tfound\tpositives\ttp\tP\tR",
            h.threshold, h.c_agree_bits, h.combined_agree_bits
        )
        .map_err(out_err)?;
        for (half, part, s) in [
            ("train", "same_site", &h.train_same_site),
            ("train", "different_site", &h.train_different_site),
            ("test", "same_site", &h.test_same_site),
            ("test", "different_site", &h.test_different_site),
            ("test", "all", &h.test),
        ] {
            writeln!(
                out,
                "{half}\t{part}\t{}\t{}\t{}\t{:.4}\t{:.4}",
                s.found, s.positives, s.true_positives, s.precision, s.recall
            )
            .map_err(out_err)?;
        }
    }
    Ok(())
}

#[derive(Args)]
pub struct TuneArgs {
    /// The index directory (created with --sample all), and --json.
    #[command(flatten)]
    ix: IndexArg,
    /// Pair truth: `key_a<TAB>key_b<TAB>jaccard` lines with a header.
    #[arg(long, value_name = "FILE")]
    truth: PathBuf,
    /// `doc_id<TAB>path` manifest when the truth's first two columns are doc ids.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// The precision each size group must reach.
    #[arg(long, value_name = "P")]
    precision_target: f64,
    /// Resemblance threshold of the pairs scored.
    #[arg(long, default_value = "0.8")]
    threshold: Threshold,
    /// The size groups to tune (their moduli are ignored); default: the default table's.
    #[arg(long, value_name = "GROUPS", default_value = ndd_index::fingerprint::adaptive::DEFAULT_SIZE_GROUPS)]
    size_groups: SizeGroups,
}

pub fn tune(a: TuneArgs) -> Result<(), Error> {
    if !(0.0..=1.0).contains(&a.precision_target) {
        return Err(Error::InvalidArgument(
            "--precision-target must be in 0..=1".into(),
        ));
    }
    let index = Index::open(&a.ix.index)?;
    let truth = Truth::load(&a.truth, a.manifest.as_deref())?;
    if matches!(truth, Truth::Labels(_)) {
        return Err(Error::InvalidArgument(
            "tune needs pair truth (key_a, key_b, jaccard)".into(),
        ));
    }
    let t = tune::tune(
        &index,
        &truth,
        a.size_groups,
        a.precision_target,
        a.threshold,
    )?;
    let mut out = io::stdout().lock();
    if a.ix.json {
        let v = serde_json::to_string(&t).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        return writeln!(out, "{v}").map_err(out_err);
    }
    writeln!(out, "table\t{}", t.table).map_err(out_err)?;
    print_groups(&mut out, &t.groups)?;
    writeln!(
        out,
        "# use: ingest --sample adaptive --size-groups \"{}\"",
        t.table
    )
    .map_err(out_err)
}

/// The size-group table of rows that have one.
pub fn print_groups(out: &mut impl Write, g: &[eval::GroupScore]) -> Result<(), Error> {
    writeln!(out, "size_group\tmodulus\tdocs\tfound\tpositives\ttp\tP\tR").map_err(out_err)?;
    for r in g {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}",
            r.group,
            r.modulus,
            r.documents,
            r.found,
            r.positives,
            r.true_positives,
            r.precision,
            r.recall
        )
        .map_err(out_err)?;
    }
    Ok(())
}

/// The by-size-group tables of the rows (text output of `eval`).
pub fn print_size_groups(out: &mut impl Write, rows: &[EvalRow]) -> Result<(), Error> {
    for r in rows.iter().filter(|r| !r.by_size_group.is_empty()) {
        writeln!(
            out,
            "# {} T={} by size group (distinct shingles of the larger document)",
            r.method, r.threshold
        )
        .map_err(out_err)?;
        print_groups(out, &r.by_size_group)?;
    }
    Ok(())
}
