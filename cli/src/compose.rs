//! `flakeid compose`: an ID from its fields, each range-checked.

use std::process::ExitCode;

use flakeid::Error;
use flakeid::error::Field;
use flakeid::rfc3339;

use crate::args::ComposeArgs;
use crate::flags::{node_flag, parse_layout, resolve_node};
use crate::out::{CliError, CliResult, print_out};

/// A `--time`: Unix milliseconds (digits only), or RFC 3339 with the expanded years
/// `decode` prints past 9999.
fn parse_time(text: &str) -> Result<i128, Error> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        // Digits past what i128 nanoseconds hold are past every layout's end anyway.
        return Ok(t
            .parse::<i128>()
            .ok()
            .and_then(|ms| ms.checked_mul(1_000_000))
            .unwrap_or(i128::MAX));
    }
    Ok(rfc3339::parse(t)?)
}

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
            _ => node_flag(Field::Node, &a.node, &layout),
        };
        CliError::new(Some(flag), e)
    })?;
    print_out(&format!("{id}\n"))?;
    Ok(ExitCode::SUCCESS)
}
