//! `flakeid claims`: the namespaces of a claim store with their layouts, the node ids of
//! each with holder, state and reservation; and the repair of a damaged reservation.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use flakeid::Clock;
use flakeid::claim::{self, ClaimInfo, ClaimStore, NamespaceInfo, NodeState};
use flakeid::clock::SystemClock;
use flakeid::rfc3339::Timestamp;

use crate::args::ClaimsArgs;
use crate::out::{CliError, CliResult, print_out};

pub(crate) fn run(a: ClaimsArgs) -> CliResult<ExitCode> {
    let url = a.store.claim.as_deref().ok_or_else(|| {
        CliError::new(
            Some("--claim"),
            "give the claim store to list, as --claim file:/var/lib/flakeid",
        )
    })?;
    if let Some(ns) = &a.store.namespace {
        claim::check_namespace(ns).map_err(|e| CliError::new(Some("--namespace"), e))?;
    }
    crate::stores::built_in(url)?;
    let options = crate::stores::open_options(&a.store)?;
    let store = crate::stores::open(url, &options)?;
    let err = |e| CliError::new(Some("--claim"), e);
    if let Some(node) = a.repair {
        return repair(&*store, a.store.namespace(), node, a.window);
    }
    let text = match &a.store.namespace {
        Some(ns) => {
            let infos = store.list(ns).map_err(err)?;
            if a.json {
                node_lines(ns, &infos)
            } else {
                let mut out = String::new();
                let _ = writeln!(
                    out,
                    "namespace {ns:?} in {}: {}",
                    store.url(),
                    plural(infos.len(), "node id", "node ids")
                );
                table(&mut out, &infos);
                out
            }
        }
        None => {
            let namespaces = every_namespace(&store).map_err(err)?;
            if a.json {
                namespace_lines(&namespaces)
            } else {
                namespace_tables(&store.url(), &namespaces)
            }
        }
    };
    print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Every namespace of the store, with its node ids.
fn every_namespace(
    store: &Arc<dyn ClaimStore>,
) -> Result<Vec<(NamespaceInfo, Vec<ClaimInfo>)>, claim::ClaimError> {
    store
        .namespaces()?
        .into_iter()
        .map(|ns| {
            let infos = store.list(&ns.namespace)?;
            Ok((ns, infos))
        })
        .collect()
}

/// `--repair NODE`: a reservation `window` past now and past what was stored.
fn repair(
    store: &dyn ClaimStore,
    ns: &str,
    node: u64,
    window: std::time::Duration,
) -> CliResult<ExitCode> {
    // A node id past the namespace's layout is no id a holder could claim: a row made
    // for it would sit in the store, unclaimable, and say nothing repaired.
    let recorded = store
        .namespaces()
        .map_err(|e| CliError::new(Some("--claim"), e))?
        .into_iter()
        .find(|info| info.namespace == ns)
        .and_then(|info| info.layout);
    if let Some(layout) = recorded
        .as_deref()
        .and_then(|r| r.parse::<flakeid::Layout>().ok())
        && node > layout.max_node()
    {
        return Err(CliError::new(
            Some("--repair"),
            format!(
                "node {node} is outside namespace {ns:?}'s layout ({}), whose node ids are 0 to {}: give one of those",
                recorded
                    .as_deref()
                    .map(|r| claim::store::layout_preset(r).unwrap_or(r))
                    .unwrap_or_default(),
                layout.max_node()
            ),
        ));
    }
    let window_ns = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
    let until = SystemClock.unix_ns().saturating_add(window_ns);
    let repaired = store.repair(ns, node, until).map_err(|e| {
        let flag = match e {
            claim::ClaimError::NodeHeld { .. } => "--repair",
            _ => "--claim",
        };
        CliError::new(Some(flag), e)
    })?;
    let before = match repaired.previous_unix_ns {
        Some(ns) => format!("it held {}", Timestamp(i128::from(ns))),
        None => "its reservation could not be read, or there was none".into(),
    };
    print_out(&format!(
        "repaired node {node} of namespace {ns:?} in {}: {before}; it is released with a reservation until {}, where its next holder starts\n",
        store.url(),
        Timestamp(i128::from(repaired.reserved_until_unix_ns))
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn reserved(info: &ClaimInfo) -> String {
    match info.reserved_until_unix_ns {
        0 => "-".into(),
        ns => Timestamp(i128::from(ns)).to_string(),
    }
}

fn held(infos: &[ClaimInfo]) -> Vec<u64> {
    infos
        .iter()
        .filter(|i| i.state == NodeState::Held)
        .map(|i| i.node)
        .collect()
}

fn table(out: &mut String, infos: &[ClaimInfo]) {
    if infos.is_empty() {
        return;
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
    if let Some(i) = infos.iter().find(|i| i.state == NodeState::Corrupt) {
        let _ = writeln!(
            out,
            "repair an unreadable node with `flakeid claims --repair {} --window DURATION` (the same --claim and --namespace)",
            i.node
        );
    }
}

fn namespace_tables(url: &str, namespaces: &[(NamespaceInfo, Vec<ClaimInfo>)]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{url}: {}",
        plural(namespaces.len(), "namespace", "namespaces")
    );
    for (ns, infos) in namespaces {
        let layout = match (
            &ns.layout,
            ns.layout.as_deref().and_then(claim::store::layout_preset),
        ) {
            (Some(record), Some(name)) => format!("layout {name} ({record})"),
            (Some(record), None) => format!("layout {record}"),
            (None, _) => "no layout recorded yet (its next claim records it)".into(),
        };
        let held = held(infos);
        let _ = writeln!(
            out,
            "\nnamespace {:?}: {layout}; {}, {} held{}",
            ns.namespace,
            plural(infos.len(), "node id", "node ids"),
            held.len(),
            if held.is_empty() {
                String::new()
            } else {
                format!(" ({held:?})")
            }
        );
        if let Some(problem) = &ns.problem {
            let _ = writeln!(out, "{problem}");
        }
        table(&mut out, infos);
    }
    out
}

fn node_json(ns: &str, i: &ClaimInfo) -> serde_json::Value {
    serde_json::json!({
        "namespace": ns,
        "node": i.node,
        "state": i.state.name(),
        "holder": i.holder,
        "reserved_until": (i.reserved_until_unix_ns > 0).then(|| reserved(i)),
        "reserved_until_unix_ns": i.reserved_until_unix_ns,
        "problem": i.problem,
    })
}

fn node_lines(ns: &str, infos: &[ClaimInfo]) -> String {
    let mut out = String::new();
    for i in infos {
        let _ = writeln!(out, "{}", node_json(ns, i));
    }
    out
}

fn namespace_lines(namespaces: &[(NamespaceInfo, Vec<ClaimInfo>)]) -> String {
    let mut out = String::new();
    for (ns, infos) in namespaces {
        let value = serde_json::json!({
            "namespace": ns.namespace,
            "layout": ns.layout,
            "layout_name": ns.layout.as_deref().and_then(claim::store::layout_preset),
            "problem": ns.problem,
            "held": held(infos),
            "nodes": infos.iter().map(|i| node_json(&ns.namespace, i)).collect::<Vec<_>>(),
        });
        let _ = writeln!(out, "{value}");
    }
    out
}

/// `n` with the singular or the plural noun: "1 namespace", "2 namespaces".
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
