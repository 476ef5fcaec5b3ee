//! `flakeid claims`: the node ids of a namespace in a claim store, with holder, state and
//! reservation.

use std::fmt::Write as _;
use std::process::ExitCode;

use flakeid::claim::{self, ClaimInfo};
use flakeid::rfc3339::Timestamp;

use crate::args::ClaimsArgs;
use crate::{CliError, CliResult, print_out};

pub(crate) fn run(a: ClaimsArgs) -> CliResult<ExitCode> {
    let url = a.store.claim.as_deref().ok_or_else(|| {
        CliError::new(
            Some("--claim"),
            "give the claim store to list, as --claim file:/var/lib/flakeid",
        )
    })?;
    let ns = &a.store.namespace;
    claim::check_namespace(ns).map_err(|e| CliError::new(Some("--namespace"), e))?;
    crate::store_built_in(url)?;
    let options = crate::generate::open_options(&a.store)?;
    let store = claim::open_with(url, &options).map_err(|e| CliError::new(Some("--claim"), e))?;
    let infos = store
        .list(ns)
        .map_err(|e| CliError::new(Some("--claim"), e))?;
    let text = if a.json {
        json_lines(ns, &infos)
    } else {
        table(ns, &store.url(), &infos)
    };
    print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn reserved(info: &ClaimInfo) -> String {
    match info.reserved_until_unix_ns {
        0 => "-".into(),
        ns => Timestamp(i128::from(ns)).to_string(),
    }
}

fn table(ns: &str, url: &str, infos: &[ClaimInfo]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "namespace {ns:?} in {url}: {} node ids", infos.len());
    if infos.is_empty() {
        return out;
    }
    let width = infos
        .iter()
        .map(|i| i.holder.as_deref().unwrap_or("-").len())
        .max()
        .unwrap_or(1)
        .max(6);
    let _ = writeln!(
        out,
        "{:<6} {:<9} {:<width$} reserved_until",
        "node", "state", "holder"
    );
    for i in infos {
        let _ = writeln!(
            out,
            "{:<6} {:<9} {:<width$} {}",
            i.node,
            i.state.name(),
            i.holder.as_deref().unwrap_or("-"),
            reserved(i)
        );
    }
    for i in infos {
        if let Some(problem) = &i.problem {
            let _ = writeln!(out, "node {}: {problem}", i.node);
        }
    }
    out
}

fn json_lines(ns: &str, infos: &[ClaimInfo]) -> String {
    let mut out = String::new();
    for i in infos {
        let value = serde_json::json!({
            "namespace": ns,
            "node": i.node,
            "state": i.state.name(),
            "holder": i.holder,
            "reserved_until": (i.reserved_until_unix_ns > 0).then(|| reserved(i)),
            "reserved_until_unix_ns": i.reserved_until_unix_ns,
            "problem": i.problem,
        });
        let _ = writeln!(out, "{value}");
    }
    out
}
