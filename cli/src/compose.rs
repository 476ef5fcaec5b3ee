//! `flakeid compose`: an ID from its fields, each range-checked.

use std::process::ExitCode;

use flakeid::Error;
use flakeid::error::Field;

use crate::args::ComposeArgs;
use crate::flags::{node_flag, parse_layout, parse_time, resolve_node};
use crate::out::{CliError, CliResult, print_out};

pub(crate) fn run(a: ComposeArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    let node = resolve_node(&layout, &a.node)?;
    let (ticks, flag) = match (&a.time, a.ticks) {
        (Some(t), _) => {
            let ticks = parse_time(t)
                .and_then(|ns| layout.ticks_at(ns))
                .map_err(|e| CliError::new(Some("--time"), e))?;
            (ticks, "--time")
        }
        (None, Some(t)) => (t, "--ticks"),
        (None, None) => {
            return Err(CliError::new(
                None,
                "give the time with --time (RFC 3339, e.g. 2026-10-31T12:00:00Z, or Unix ms) \
                 or the raw tick count with --ticks",
            ));
        }
    };
    let id = layout.compose(ticks, a.sequence, node).map_err(|e| {
        let flag = match e {
            Error::OutOfRange {
                field: Field::Sequence,
                ..
            } => "--sequence",
            Error::OutOfRange {
                field: Field::Ticks,
                ..
            } => flag,
            _ => node_flag(Field::Node, &a.node),
        };
        CliError::new(Some(flag), e)
    })?;
    print_out(&format!("{id}\n"))?;
    Ok(ExitCode::SUCCESS)
}
