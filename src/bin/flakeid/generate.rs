//! `flakeid gen`: mint IDs, one per line.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::Duration;

use flakeid::{Encoding, Generator, Id};

use crate::args::{Format, GenArgs};
use crate::{CliError, CliResult, parse_layout, quiet_on_broken_pipe, resolve_node};

pub(crate) fn run(a: GenArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    let node = resolve_node(&layout, &a.node)?;
    let generator = Generator::builder(layout)
        .node(node)
        .max_wait(Duration::from_secs(60))
        .build()
        .map_err(|e| CliError::new(None, e))?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut batch = vec![Id::default(); 4096];
    let mut buf = [0u8; flakeid::Encoding::MAX_LEN];
    // JSON is the decimal text as a string, so JavaScript keeps every digit.
    let (encoding, quoted) = match a.format {
        Format::Decimal => (Encoding::Decimal, false),
        Format::Hex => (Encoding::Hex, false),
        Format::Base32 => (Encoding::Base32, false),
        Format::Json => (Encoding::Decimal, true),
    };
    let mut left = a.count;
    while left > 0 {
        let want = left.min(batch.len() as u64) as usize;
        let n = generator
            .next_ids(&mut batch[..want])
            .map_err(|e| CliError::new(None, e))?;
        for id in &batch[..n] {
            let text = id.encode(encoding, &mut buf);
            let res = if quoted {
                writeln!(out, "\"{text}\"")
            } else {
                writeln!(out, "{text}")
            };
            if let Err(e) = res {
                return quiet_on_broken_pipe(e);
            }
        }
        left -= n as u64;
    }
    out.flush().or_else(quiet_on_broken_pipe)?;
    Ok(ExitCode::SUCCESS)
}
