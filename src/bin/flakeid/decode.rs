//! `flakeid decode`: IDs from arguments or standard input, read as bytes, streamed
//! through the batch decoder; every good line is written and every bad one reported.

use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use flakeid::__private::rfc3339::Timestamp;
use flakeid::decode::{Columns, Decoder};
use flakeid::{Encoding, Error, Layout, Order, ParseError};

use crate::args::{DecodeArgs, InputEncoding};
use crate::{CliError, CliResult, parse_layout, quiet_on_broken_pipe, warn};

/// One decoded row, from the batch decoder's columns.
struct Row {
    id: u64,
    ticks: u64,
    unix_ms: u64,
    sequence: u64,
    node: u64,
}

fn write_json_record(out: &mut impl Write, layout: &Layout, r: &Row) -> io::Result<()> {
    write!(
        out,
        "{{\"id\":\"{}\",\"ticks\":{},\"unix_ms\":{},\"time\":\"{}\",\"sequence\":{},\"node\":{}",
        r.id,
        r.ticks,
        r.unix_ms,
        Timestamp(i128::from(r.unix_ms) * 1_000_000),
        r.sequence,
        r.node
    )?;
    if layout.datacenter_bits() > 0 {
        let (dc, worker) = layout.split_node(r.node);
        write!(out, ",\"datacenter\":{dc},\"worker\":{worker}")?;
    }
    if layout.order() == Order::TimeSequenceNode {
        write!(out, ",\"machine\":{}", r.node)?;
    }
    writeln!(out, "}}")
}

fn write_table_header(out: &mut impl Write, layout: &Layout) -> io::Result<()> {
    write!(
        out,
        "{:<20} {:<25} {:>14} {:>8} {:>8}",
        "id", "time", "ticks", "sequence", "node"
    )?;
    if layout.datacenter_bits() > 0 {
        write!(out, " {:>10} {:>6}", "datacenter", "worker")?;
    }
    writeln!(out)
}

fn write_table_row(out: &mut impl Write, layout: &Layout, r: &Row) -> io::Result<()> {
    write!(
        out,
        "{:<20} {:<25} {:>14} {:>8} {:>8}",
        r.id,
        Timestamp(i128::from(r.unix_ms) * 1_000_000).to_string(),
        r.ticks,
        r.sequence,
        r.node
    )?;
    if layout.datacenter_bits() > 0 {
        let (dc, worker) = layout.split_node(r.node);
        write!(out, " {dc:>10} {worker:>6}")?;
    }
    writeln!(out)
}

/// IDs per batch handed to the (SIMD) batch decoder.
const DECODE_BATCH: usize = 4096;

/// How much of a bad line an error message echoes.
const ECHO_CHARS: usize = 80;

/// Streams IDs through the batch decoder a batch at a time; bad lines are reported on
/// standard error as they are met (after every good line before them is written) and
/// counted.
struct DecodeStream<'a, W: Write> {
    decoder: Decoder,
    encoding: InputEncoding,
    json: bool,
    /// The table's header is written before the first row, so there is none without rows.
    header_written: bool,
    out: &'a mut W,
    ids: Vec<u64>,
    cols: [Vec<u64>; 4],
    bad_lines: u64,
}

/// Why a line is not an ID, and a hint at what to do.
struct BadLine {
    error: String,
    hint: &'static str,
}

impl<E: Into<Error>> From<E> for BadLine {
    fn from(e: E) -> Self {
        BadLine {
            error: e.into().to_string(),
            hint: "",
        }
    }
}

/// The ID text of a line: the line itself, a JSON string, or the `id` field of a JSON
/// object (a string or a number).
fn id_text(line: &str) -> Result<std::borrow::Cow<'_, str>, BadLine> {
    if !line.starts_with(['"', '{']) {
        return Ok(line.into());
    }
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| BadLine {
        error: format!("not JSON: {e}"),
        hint: "",
    })?;
    let field = match &value {
        serde_json::Value::Object(map) => map.get("id"),
        other => Some(other),
    };
    match field {
        Some(serde_json::Value::String(s)) => Ok(s.clone().into()),
        Some(serde_json::Value::Number(n)) if n.is_u64() => Ok(n.to_string().into()),
        _ => Err(BadLine {
            error: "JSON without an ID: expected a string, or an object whose \"id\" is a \
                    string or a non-negative integer"
                .into(),
            hint: "",
        }),
    }
}

/// A hint for text `parse_any` could not place.
fn encoding_hint(text: &str) -> &'static str {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        "; if it is hex, write it with 0x or give --encoding hex"
    } else if t.len() == 12 || t.len() == 14 {
        "; base32 IDs have exactly 13 characters"
    } else {
        ""
    }
}

impl<W: Write> DecodeStream<'_, W> {
    /// Takes one line (or argument) as bytes: skips it when blank, else decodes it or
    /// reports it, with `number` in the report.
    fn push_bytes(&mut self, what: &str, number: u64, bytes: &[u8]) -> CliResult {
        let trimmed = bytes.trim_ascii();
        if trimmed.is_empty() {
            return Ok(());
        }
        let result = match std::str::from_utf8(trimmed) {
            Ok(text) => self.parse(text),
            Err(e) => Err(BadLine {
                error: format!("not UTF-8 text (byte {} is invalid)", e.valid_up_to() + 1),
                hint: "",
            }),
        };
        match result {
            Ok(id) => {
                self.ids.push(id);
                if self.ids.len() == DECODE_BATCH {
                    self.flush_batch()?;
                }
            }
            Err(bad) => {
                // Every good line before this one is out before the report.
                self.flush_batch()?;
                self.out.flush().or_else(quiet_on_broken_pipe)?;
                self.bad_lines += 1;
                warn(format_args!(
                    "{what} {number}: {}: {}{}",
                    echo(trimmed),
                    bad.error,
                    bad.hint
                ));
            }
        }
        Ok(())
    }

    fn parse(&self, line: &str) -> Result<u64, BadLine> {
        let layout = self.decoder.layout();
        let text = id_text(line)?;
        let parsed = match self.encoding {
            InputEncoding::Auto => Encoding::parse_any(&text).map_err(|e| {
                let hint = match e {
                    ParseError::UnknownEncoding { .. } => encoding_hint(&text),
                    _ => "",
                };
                BadLine {
                    error: e.to_string(),
                    hint,
                }
            })?,
            InputEncoding::Decimal => Encoding::Decimal.parse(&text)?,
            InputEncoding::Hex => Encoding::Hex.parse(&text)?,
            InputEncoding::Base32 => Encoding::Base32.parse(&text)?,
        };
        layout.decompose(parsed).map_err(|e| BadLine {
            error: e.to_string(),
            hint: if parsed > i64::MAX as u64 && layout.is_i64_safe() {
                "; IDs of 2^63 or more come from 64-bit layouts such as discord, instagram or \
                 mastodon: give --layout NAME (flakeid layout --list)"
            } else {
                ""
            },
        })?;
        Ok(parsed)
    }

    fn flush_batch(&mut self) -> CliResult {
        let n = self.ids.len();
        if n == 0 {
            return Ok(());
        }
        let [t, m, s, nd] = &mut self.cols;
        for c in [&mut *t, &mut *m, &mut *s, &mut *nd] {
            c.resize(n, 0);
        }
        self.decoder
            .decode(
                &self.ids,
                Columns {
                    ticks: Some(t),
                    unix_ms: Some(m),
                    sequence: Some(s),
                    node: Some(nd),
                },
            )
            .map_err(|e| CliError::new(None, e))?;
        let layout = *self.decoder.layout();
        if !self.json && !self.header_written {
            self.header_written = true;
            write_table_header(self.out, &layout).or_else(quiet_on_broken_pipe)?;
        }
        for i in 0..n {
            let row = Row {
                id: self.ids[i],
                ticks: t[i],
                unix_ms: m[i],
                sequence: s[i],
                node: nd[i],
            };
            let res = if self.json {
                write_json_record(self.out, &layout, &row)
            } else {
                write_table_row(self.out, &layout, &row)
            };
            res.or_else(quiet_on_broken_pipe)?;
        }
        self.ids.clear();
        Ok(())
    }
}

/// At most [`ECHO_CHARS`] characters of a bad line, quoted and escaped, with the length
/// when it was cut.
fn echo(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(ECHO_CHARS).collect();
    if chars.next().is_some() {
        format!("{head:?}... ({} bytes)", bytes.len())
    } else {
        format!("{head:?}")
    }
}

/// The UTF-8 byte order mark, skipped at the start of the input.
const BOM: &[u8] = b"\xEF\xBB\xBF";

pub(crate) fn run(a: DecodeArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    if layout == Layout::mastodon() {
        warn(format_args!(
            "note: mastodon: the low 16 bits, shown as sequence, are hash-derived in Mastodon; only the time is meaningful"
        ));
    }
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut stream = DecodeStream {
        decoder: Decoder::new(&layout),
        encoding: a.encoding,
        json: a.json,
        header_written: false,
        out: &mut out,
        ids: Vec::with_capacity(DECODE_BATCH),
        cols: std::array::from_fn(|_| Vec::with_capacity(DECODE_BATCH)),
        bad_lines: 0,
    };
    if a.ids.is_empty() {
        // Bytes, not `String`s: a line that is not UTF-8 is one bad line, not the end.
        let mut reader = io::stdin().lock();
        let mut line = Vec::new();
        let mut line_no = 0u64;
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Whatever was read before the failure is still written.
                    stream.flush_batch()?;
                    stream.out.flush().or_else(quiet_on_broken_pipe)?;
                    return Err(CliError::new(
                        None,
                        format!("reading standard input after line {line_no}: {e}"),
                    ));
                }
            }
            line_no += 1;
            let bytes = match line_no {
                1 => line.strip_prefix(BOM).unwrap_or(&line),
                _ => &line,
            };
            stream.push_bytes("line", line_no, bytes)?;
        }
    } else {
        for (i, text) in a.ids.iter().enumerate() {
            stream.push_bytes("argument", i as u64 + 1, text.as_bytes())?;
        }
    }
    stream.flush_batch()?;
    let bad_lines = stream.bad_lines;
    out.flush().or_else(quiet_on_broken_pipe)?;
    Ok(if bad_lines > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
