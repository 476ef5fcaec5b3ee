//! `serve/README.md` tells the truth about the metrics: its table lists exactly the series
//! `flakeid_serve::SERIES` declares (which `/metrics` reports from the start), with the
//! same kinds and labels.

use flakeid_serve::metrics::Kind;

#[test]
fn the_metrics_table_is_the_series_the_service_reports() {
    let readme = include_str!("../README.md");
    let table: Vec<(String, String, String)> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| series |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (
                cells[1].trim_matches('`').to_string(),
                cells[2].to_string(),
                cells[3].to_string(),
            )
        })
        .collect();
    let declared: Vec<(String, String, String)> = flakeid_serve::SERIES
        .iter()
        .map(|&(name, kind, labels, _)| {
            let kind = match kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram => "histogram",
            };
            (name.to_string(), kind.to_string(), labels.to_string())
        })
        .collect();
    assert_eq!(table, declared);
}
