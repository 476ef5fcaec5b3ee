//! `flakeid range`: the first and last ID a layout holds for a span of time, as an SQL
//! condition or JSON.

use std::process::ExitCode;

use flakeid::rfc3339::Timestamp;
use flakeid::{Clock, Error};

use crate::args::RangeArgs;
use crate::flags::{parse_layout, parse_time};
use crate::out::{CliError, CliResult, print_out, warn};

pub(crate) fn run(a: RangeArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    let from = parse_time(&a.from).map_err(|e| CliError::new(Some("--from"), e))?;
    let to = match &a.to {
        Some(to) => parse_time(to).map_err(|e| CliError::new(Some("--to"), e))?,
        None => i128::from(flakeid::clock::SystemClock.unix_ns()),
    };
    let range = layout.id_range_ns(from, to).map_err(|e| {
        let flag = match e {
            Error::BeforeEpoch { .. } => "--to",
            _ if a.to.is_none() => "--from",
            Error::EmptySpan { .. } => "--to",
            _ => "--from",
        };
        CliError::new(Some(flag), e)
    })?;
    let (start, end) = (layout.unix_ns_of(0).unwrap_or(0), layout.end_unix_ns());
    if from < start {
        warn(format_args!(
            "note: the span starts before the layout's epoch ({}): the range starts at its first ID",
            Timestamp(start)
        ));
    }
    if to > end {
        warn(format_args!(
            "note: the span ends past the layout's lifetime ({}): the range ends at its last ID",
            Timestamp(end)
        ));
    }
    let text = if a.json {
        flakeid_text::range::range_json(&layout, from, to, range)
            .map_err(|e| CliError::new(None, e))?
            + "\n"
    } else {
        format!("{} BETWEEN {} AND {}\n", a.column, range.first, range.last)
    };
    print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}
