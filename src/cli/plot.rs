//! `ndd-index plot`: draws a figure described in JSON (`ndd_index::plot::Figure`) as SVG. The
//! benchmark and evaluation scripts (tools/bench_charts.py, tools/eval_charts.py) collect their
//! runs' JSON into such a description, so every chart is drawn by the same code.

use std::path::{Path, PathBuf};

use clap::Args;
use ndd_index::plot::Figure;
use ndd_index::Error;

#[derive(Args)]
pub struct PlotArgs {
    /// The figure: {"title": .., "charts": [{"kind": "line", "title": .., "x": {"label": ..,
    /// "log": true}, "y": {..}, "series": [{"name": .., "points": [[x, y], ..]}]}, {"kind":
    /// "bar", "categories": [..], "y": {..}, "series": [{"name": .., "values": [..]}]}]}
    /// ("-": standard input).
    #[arg(long, value_name = "FILE.json")]
    spec: PathBuf,
    /// The SVG file to write.
    #[arg(long, value_name = "FILE.svg")]
    out: PathBuf,
}

pub fn run(a: PlotArgs) -> Result<(), Error> {
    let text = if a.spec.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| Error::io("<stdin>", e))?
    } else {
        std::fs::read_to_string(&a.spec).map_err(|e| Error::io(&a.spec, e))?
    };
    let fig: Figure = serde_json::from_str(&text).map_err(|e| {
        Error::InvalidArgument(format!(
            "{}: not a figure description: {e}",
            a.spec.display()
        ))
    })?;
    write_atomic(&a.out, &fig.render())
}

/// Writes `text` to `path` through a temporary file next to it and a rename, so a reader never
/// sees half a chart.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), Error> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}
