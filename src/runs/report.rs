//! The text form of a [`RunsReport`]: tab-separated sections, each headed by a `#` line.

use std::io::{self, Write};

use super::RunsReport;

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Writes the report as text (the same numbers as `--json`).
pub fn write_text(out: &mut impl Write, r: &RunsReport) -> io::Result<()> {
    let levels: Vec<&String> = r
        .topics
        .first()
        .map(|t| t.duplicated.keys().collect())
        .unwrap_or_default();
    writeln!(
        out,
        "# runs: {} (T = {}, n = {:?}; {:.2} s)",
        r.runs.len(),
        r.threshold,
        r.top,
        r.seconds
    )?;
    for run in &r.runs {
        writeln!(
            out,
            "run\t{}\t{}\ttopics {}\tdocuments {}",
            run.run, run.file, run.topics, run.documents
        )?;
    }
    writeln!(
        out,
        "\n# topics: documents of all runs per topic, and how many are duplicated at t"
    )?;
    let head: Vec<String> = levels.iter().map(|l| format!("dup@{l}")).collect();
    writeln!(out, "topic\tdocs\t{}", head.join("\t"))?;
    let (mut docs, mut dup) = (0u64, vec![0u64; levels.len()]);
    for t in &r.topics {
        let v: Vec<String> = t.duplicated.values().map(u64::to_string).collect();
        writeln!(out, "{}\t{}\t{}", t.topic, t.docs, v.join("\t"))?;
        docs += t.docs;
        for (s, c) in dup.iter_mut().zip(t.duplicated.values()) {
            *s += c;
        }
    }
    let v: Vec<String> = dup
        .iter()
        .map(|&c| format!("{:.2}%", pct(c, docs)))
        .collect();
    writeln!(out, "all\t{docs}\t{}", v.join("\t"))?;

    writeln!(
        out,
        "\n# run_topics: top n of each run and topic; duplicated and redundant at T = {}",
        r.threshold
    )?;
    writeln!(out, "run\ttopic\tn\tdocs\tduplicated\tredundant")?;
    for rt in &r.run_topics {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}",
            rt.run, rt.topic, rt.n, rt.docs, rt.duplicated, rt.redundant
        )?;
    }

    writeln!(
        out,
        "\n# table (Table 4.1): % of run-topics whose redundant/docs is at least x, T = {}",
        r.threshold
    )?;
    let head: Vec<String> = r
        .table
        .iter()
        .map(|t| format!("n={} ({})", t.n, t.run_topics))
        .collect();
    writeln!(out, "at_least\t{}", head.join("\t"))?;
    if let Some(first) = r.table.first() {
        for (i, row) in first.rows.iter().enumerate() {
            let v: Vec<String> = r
                .table
                .iter()
                .map(|t| format!("{:.2}", t.rows[i].run_topics_percent))
                .collect();
            writeln!(out, "{}%\t{}", row.at_least_percent, v.join("\t"))?;
        }
    }

    if let Some(q) = &r.qrels {
        writeln!(
            out,
            "\n# qrels: relevant documents duplicated at t among each topic's relevant documents"
        )?;
        let head: Vec<String> = q.duplicated.keys().map(|l| format!("dup@{l}")).collect();
        writeln!(out, "topic\trelevant\t{}", head.join("\t"))?;
        for t in &q.topics {
            let v: Vec<String> = t.duplicated.values().map(u64::to_string).collect();
            writeln!(out, "{}\t{}\t{}", t.topic, t.relevant, v.join("\t"))?;
        }
        let v: Vec<String> = q
            .duplicated
            .values()
            .map(|&c| format!("{c} ({:.2}%)", pct(c, q.relevant)))
            .collect();
        writeln!(out, "all\t{}\t{}", q.relevant, v.join("\t"))?;
    }

    let s = &r.sources;
    writeln!(
        out,
        "\n# sources: distinct pairs >= T inside a topic collection\npairs\t{}\nsame_site\t{}\t{:.2}%\n\
         different_site\t{}\t{:.2}%\nunknown_site\t{}",
        s.pairs,
        s.same_site,
        pct(s.same_site, s.pairs),
        s.different_site,
        pct(s.different_site, s.pairs),
        s.unknown_site
    )?;
    let u = &r.unresolved;
    writeln!(
        out,
        "\n# unresolved: docnos not in the index (kept in place, never duplicates)\ncount\t{}{}",
        u.count,
        if u.examples.is_empty() {
            String::new()
        } else {
            format!("\nexamples\t{}", u.examples.join(" "))
        }
    )
}
