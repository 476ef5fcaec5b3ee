//! `flakeid decode`: IDs from arguments or standard input, read as bytes, streamed
//! through the batch decoder; every good line is written and every bad one reported.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use flakeid::Layout;
use flakeid::decode::{Backend, Decoder};

use crate::args::{BackendChoice, DecodeArgs, DecodeFormat, InputEncoding};
use crate::flags::parse_layout;
use crate::out::{CliError, CliResult, quiet_on_broken_pipe, warn};
use flakeid_text::batch::Batch;
use flakeid_text::rows::{RowFormat, RowWriter};

mod line;
mod table;

use line::{BadLine, DECODE_BATCH, id_text, leading_digits, parse_id};

/// How much of standard input is read at a time.
const READ_BLOCK: usize = 1 << 20;
/// The longest line read: an ID line is a few dozen bytes, a JSON object line a few
/// hundred. A longer line is reported once as bad and skipped up to its newline, so
/// memory stays flat (and the time linear) for any input, `/dev/zero` included.
const MAX_LINE: usize = 64 * 1024;

/// How much of a bad line an error message echoes.
const ECHO_CHARS: usize = 80;

/// Streams IDs through the batch decoder a batch at a time; bad lines are reported on
/// standard error as they are met (after every good line before them is written) and
/// counted.
struct DecodeStream<'a, W: Write> {
    batch: Batch,
    encoding: InputEncoding,
    rows: RowWriter,
    /// The header is written before the first row, so there is none without rows.
    header_written: bool,
    out: &'a mut W,
    /// One batch's rows as text, written with one call.
    text: Vec<u8>,
    bad_lines: u64,
}

impl<W: Write> DecodeStream<'_, W> {
    /// Takes the first complete line of `block` (the input from a line's start), if it has
    /// one, and returns its length with the newline. A line of only decimal digits (up to
    /// 19, so no overflow) is read in the same pass that finds its end; any other (20
    /// digits, hex, base32, JSON, bad text) goes to [`Self::push_bytes`]'s full parser.
    #[inline]
    fn take_line(&mut self, block: &[u8], number: u64) -> CliResult<Option<usize>> {
        let decimal = matches!(self.encoding, InputEncoding::Auto | InputEncoding::Decimal);
        let (v, i) = leading_digits(block);
        // The digits end the line (`\n`, or Windows' `\r\n`).
        let ending = match (block.get(i), block.get(i + 1)) {
            (Some(b'\n'), _) => 1,
            (Some(b'\r'), Some(b'\n')) => 2,
            _ => 0,
        };
        if decimal && i > 0 && ending > 0 && v <= self.batch.decoder().layout().max_id() {
            self.push_id(v)?;
            return Ok(Some(i + ending));
        }
        let Some(end) = block[i..].iter().position(|&b| b == b'\n').map(|e| i + e) else {
            return Ok(None);
        };
        let line = &block[..end];
        let line = if number == 1 {
            line.strip_prefix(BOM).unwrap_or(line)
        } else {
            line
        };
        self.push_bytes("line", number, line)?;
        Ok(Some(end + 1))
    }

    /// Queues a good ID, decoding the batch once it is full.
    #[inline]
    fn push_id(&mut self, id: u64) -> CliResult {
        self.batch.push(id);
        if self.batch.len() == DECODE_BATCH {
            self.flush_batch()?;
        }
        Ok(())
    }

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
            Ok(id) => self.push_id(id)?,
            Err(bad) => self.report(what, number, trimmed, &bad.error, bad.hint)?,
        }
        Ok(())
    }

    /// Reports a bad line (`shown` is echoed, shortened), after every good line before it
    /// is out.
    fn report(
        &mut self,
        what: &str,
        number: u64,
        shown: &[u8],
        error: &str,
        hint: &str,
    ) -> CliResult {
        self.flush_batch()?;
        self.out.flush().or_else(quiet_on_broken_pipe)?;
        self.bad_lines += 1;
        warn(format_args!(
            "{what} {number}: {}: {error}{hint}",
            echo(shown)
        ));
        Ok(())
    }

    fn parse(&self, line: &str) -> Result<u64, BadLine> {
        parse_id(
            self.batch.decoder().layout(),
            self.encoding,
            &id_text(line)?,
        )
    }

    fn flush_batch(&mut self) -> CliResult {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.batch.decode().map_err(|e| CliError::new(None, e))?;
        self.text.clear();
        if !self.header_written {
            self.header_written = true;
            self.rows.header(&mut self.text);
        }
        self.rows.rows(&mut self.text, &self.batch);
        self.out
            .write_all(&self.text)
            .or_else(quiet_on_broken_pipe)?;
        self.batch.clear();
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

/// The backend `--backend` names, else `FLAKEID_DECODE_BACKEND`, else the measured fastest.
fn backend(flag: Option<BackendChoice>) -> CliResult<Backend> {
    const VAR: &str = "FLAKEID_DECODE_BACKEND";
    let (name, source) = match flag {
        Some(choice) => {
            let name = match choice {
                BackendChoice::Auto => "auto",
                BackendChoice::Scalar => "scalar",
                BackendChoice::Avx2 => "avx2",
                BackendChoice::Avx512 => "avx512",
            };
            (name.to_owned(), "--backend")
        }
        None => match std::env::var(VAR) {
            Ok(v) if !v.trim().is_empty() => (v.trim().to_ascii_lowercase(), VAR),
            _ => ("auto".to_owned(), ""),
        },
    };
    Backend::from_name(&name).ok_or_else(|| {
        let known = ["auto", "scalar", "avx2", "avx512"].contains(&name.as_str());
        let available: Vec<&str> = Backend::available().map(Backend::name).collect();
        CliError::new(
            Some(source),
            if known {
                format!(
                    "{name:?}: this CPU (or build) cannot run it; it has {}",
                    available.join(", ")
                )
            } else {
                format!("{name:?}: not a backend; give auto, scalar, avx2 or avx512")
            },
        )
    })
}

pub(crate) fn run(a: DecodeArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    if layout == Layout::mastodon() {
        warn(format_args!(
            "note: mastodon: the low 16 bits, shown as sequence, are hash-derived in Mastodon; only the time is meaningful"
        ));
    }
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let format = match (a.json, a.format) {
        (true, _) | (false, Some(DecodeFormat::Json)) => Some(RowFormat::Json),
        (false, Some(DecodeFormat::Table)) => Some(RowFormat::Table),
        (false, Some(DecodeFormat::Csv)) => Some(RowFormat::Csv),
        (false, None) => None,
    };
    if let Some(column) = &a.column {
        let decoder = Decoder::with_backend(&layout, backend(a.backend)?);
        return table::run(column, decoder, a.encoding, format, &mut out);
    }
    let format = format.unwrap_or(RowFormat::Table);
    let mut stream = DecodeStream {
        batch: Batch::new(Decoder::with_backend(&layout, backend(a.backend)?)),
        encoding: a.encoding,
        rows: RowWriter::new(&layout, format),
        header_written: false,
        out: &mut out,
        // Cleared for each batch, never shrunk: grown by the first batches, then reused
        // as it is.
        text: Vec::new(),
        bad_lines: 0,
    };
    if a.ids.is_empty() {
        // Bytes, not `String`s: a line that is not UTF-8 is one bad line, not the end. Read
        // in large blocks and split in place; a line longer than `MAX_LINE` is reported and
        // skipped to its newline, so memory stays flat for any input size.
        let mut reader = io::stdin().lock();
        let mut buf = vec![0u8; READ_BLOCK];
        let (mut filled, mut line_no) = (0usize, 0u64);
        // Inside an over-long line, already reported: its bytes up to the newline go.
        let mut skipping = false;
        loop {
            let n = match io::Read::read(&mut reader, &mut buf[filled..]) {
                Ok(n) => n,
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
            };
            filled += n;
            let mut start = 0;
            if skipping {
                match buf[..filled].iter().position(|&b| b == b'\n') {
                    Some(newline) => {
                        skipping = false;
                        start = newline + 1;
                    }
                    None if n == 0 => break,
                    None => {
                        filled = 0;
                        continue;
                    }
                }
            }
            while let Some(len) = stream.take_line(&buf[start..filled], line_no + 1)? {
                line_no += 1;
                start += len;
            }
            if n == 0 {
                // The last line, without a newline.
                if start < filled {
                    line_no += 1;
                    let line = &buf[start..filled];
                    let line = if line_no == 1 {
                        line.strip_prefix(BOM).unwrap_or(line)
                    } else {
                        line
                    };
                    stream.push_bytes("line", line_no, line)?;
                }
                break;
            }
            buf.copy_within(start..filled, 0);
            filled -= start;
            if filled > MAX_LINE {
                line_no += 1;
                stream.report(
                    "line",
                    line_no,
                    &buf[..filled.min(ECHO_CHARS)],
                    &format!("longer than {MAX_LINE} bytes (an ID line is a few dozen)"),
                    "; skipped to its end: is this the right input?",
                )?;
                skipping = true;
                filled = 0;
            }
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
